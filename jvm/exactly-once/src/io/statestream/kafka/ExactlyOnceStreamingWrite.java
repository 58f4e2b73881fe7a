package io.statestream.kafka;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's side of the sink: it hands the tasks a writer factory and, once every task has
 * committed its transaction, adds up what they report (a few numbers per task, never records).
 */
final class ExactlyOnceStreamingWrite implements StreamingWrite {
  private static final Logger LOG = LoggerFactory.getLogger("statestream.kafka");
  private final SinkOptions options;

  ExactlyOnceStreamingWrite(SinkOptions options) {
    this.options = options;
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    return new WriterFactory(options);
  }

  /** Sent to the tasks: it holds the options only. */
  private record WriterFactory(SinkOptions options) implements StreamingDataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
      return new PartitionWriter(options, partitionId, epochId);
    }
  }

  /**
   * Kafka's coordinator fences a task's earlier attempts (one transactional id per partition),
   * so Spark's commit coordinator is not needed; it would also fail the whole stage when an
   * attempt that was allowed to commit dies, where a retry is what is wanted.
   */
  @Override
  public boolean useCommitCoordinator() {
    return false;
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    long records = 0;
    int skipped = 0;
    for (WriterCommitMessage message : messages) {
      if (message instanceof PartitionWritten written) {
        records += written.records();
        skipped += written.skipped() ? 1 : 0;
      }
    }
    if (skipped > 0) {
      LOG.warn(
          "batch {} of {}: {} partition(s) were committed before; skipped",
          epochId,
          options.lineage(),
          skipped);
    }
    LOG.debug("batch {} of {}: {} records written", epochId, options.lineage(), records);
    if (options.pauseAfterCommitMs() > 0) { // fault injection: a window to crash in
      System.out.println("committed batch " + epochId + " to Kafka");
      System.out.flush();
      try {
        Thread.sleep(options.pauseAfterCommitMs());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    LOG.warn("batch {} of {} failed; its open transactions are aborted", epochId, options.lineage());
  }
}
