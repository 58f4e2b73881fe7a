package io.statestream.kafka;

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
 * See {@link PartitionWriter} for why each record is written exactly once.
 */
public final class ExactlyOnceKafkaSink implements StreamSinkProvider {

  /**
   * Close the producers this JVM keeps across batches, as a new executor would start: the next
   * batch of each partition fences and reads its marker again (tests; benchmarks' clean-up).
   */
  public static void closeProducers() {
    TransactionalPartition.closeAll();
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
