package io.statestream.kafka;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.execution.streaming.Sink;
import org.apache.spark.sql.sources.StreamSinkProvider;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A streaming sink that writes statestream's packed output rows to Kafka exactly once, from the
 * tasks: each task writes its partition's records in a Kafka transaction of its own, with a
 * commit marker {query, partition, batch_id} on the commits topic inside the same transaction.
 *
 * <pre>
 *   df.writeStream.format("io.statestream.kafka.ExactlyOnceKafkaSink")
 *     .option("query", "join").option("commits.topic", "statestream.commits")
 *     .option("kafka.bootstrap.servers", "localhost:9092")   // any kafka.* client option
 * </pre>
 *
 * The rows need the columns topic (string), keys (string: a JSON array of [key, count] runs)
 * and values (binary: the records' values, one per line); rows with an empty topic are skipped.
 * See {@link PartitionWriter} for why each record is written exactly once. The Python side (the
 * packed rows, the query's start, the commits topic) and the whole argument are in the package
 * {@code statestream.exactly_once} (src/statestream/exactly_once/__init__.py).
 */
public final class ExactlyOnceKafkaSink implements StreamSinkProvider {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Close the producers this JVM keeps across batches, as a new executor would start: the next
   * batch of each partition fences and reads its marker again (tests; benchmarks' clean-up).
   */
  public static void closeProducers() {
    TransactionalPartition.closeAll();
  }

  /**
   * The records of one packed row as the tasks unpack and send them, as a JSON array of [key,
   * value in Base64]: what the golden test of the row format compares (tests/exactly_once).
   */
  public static String unpackedRecords(String keys, byte[] values) throws IOException {
    ArrayNode records = JSON.createArrayNode();
    TransactionalPartition.unpack(
        keys,
        values,
        (key, value) ->
            records
                .addArray()
                .add(key == null ? null : new String(key, StandardCharsets.UTF_8))
                .add(value));
    return JSON.writeValueAsString(records);
  }

  /** The key of the commit marker the tasks write (the partition's transactional id). */
  public static String markerKey(String query, String queryId, int partition) {
    return markerOptions(query, queryId).partitionKey(partition);
  }

  /** The value of the commit marker the tasks write, byte for byte. */
  public static byte[] markerValue(String query, String queryId, int partition, long batchId) {
    return CommitMarkers.marker(markerOptions(query, queryId), partition, batchId);
  }

  /** The batch id that the tasks read from a commit marker's value. */
  public static long markerBatchId(byte[] value) throws IOException {
    return CommitMarkers.batchId(value);
  }

  private static SinkOptions markerOptions(String query, String queryId) {
    return new SinkOptions(query, queryId, "", java.util.Map.of(), 0, 0, 0, 0L, "", false);
  }

  @Override
  public Sink createSink(
      SQLContext context,
      Map<String, String> parameters,
      Seq<String> partitionColumns,
      OutputMode outputMode) {
    return new MicroBatchSink(
        new CaseInsensitiveStringMap(CollectionConverters.asJava(parameters)));
  }
}
