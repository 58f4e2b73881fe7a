package io.statestream.kafka;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

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
public final class ExactlyOnceKafkaSink implements TableProvider {

  /**
   * Close the producers this JVM keeps across batches, as a new executor would start: the next
   * batch of each partition fences and reads its marker again (tests; benchmarks' clean-up).
   */
  public static void closeProducers() {
    TransactionalPartition.closeAll();
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return new StructType(); // the query's own schema arrives with the write (LogicalWriteInfo)
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new SinkTable();
  }

  private static final class SinkTable implements SupportsWrite {
    @Override
    public String name() {
      return "statestream exactly-once Kafka sink";
    }

    @Override
    public StructType schema() {
      return new StructType();
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.STREAMING_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new Builder(info);
    }
  }

  private static final class Builder implements WriteBuilder, SupportsStreamingUpdateAsAppend {
    private final LogicalWriteInfo info;

    Builder(LogicalWriteInfo info) {
      this.info = info;
    }

    @Override
    public Write build() {
      SinkOptions options = SinkOptions.of(info.options(), info.queryId(), info.schema());
      return new Write() {
        @Override
        public String description() {
          return "statestream exactly-once Kafka sink of query " + options.lineage();
        }

        @Override
        public StreamingWrite toStreaming() {
          return new ExactlyOnceStreamingWrite(options);
        }
      };
    }
  }
}
