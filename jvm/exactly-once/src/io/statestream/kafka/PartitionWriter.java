package io.statestream.kafka;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One task's writer: it keeps its partition's packed rows and, at the task's commit, writes their
 * records in one Kafka transaction of the partition ({@link TransactionalPartition}).
 *
 * <p>Why each record reaches Kafka exactly once:
 *
 * <ul>
 *   <li>A batch's input is fixed before it runs (Spark's offset log), and a task of batch N
 *       reads the state its partition had after batch N-1, whichever attempt it is: the state
 *       store is versioned by batch, and an attempt that failed never made its version the one
 *       the next batch reads. The processors sort their rows by Kafka offset, so every attempt
 *       of (N, partition) produces the same records.
 *   <li>Every attempt of a partition uses the same transactional id (query, checkpoint's query
 *       id, partition). Its {@code initTransactions} fences all earlier attempts: the broker
 *       aborts their open transaction and refuses their later commits.
 *   <li>After fencing, the attempt reads the partition's last commit marker (read_committed).
 *       If batch N is there, an earlier attempt committed it and this one writes nothing; if
 *       not, no earlier attempt can commit any more, and this one writes the batch.
 *   <li>The records and the marker are in one transaction: a read_committed consumer sees both
 *       or neither, so no batch is half-visible.
 * </ul>
 */
final class PartitionWriter implements DataWriter<InternalRow> {
  private final SinkOptions options;
  private final int partition;
  private final long batchId;
  private final List<InternalRow> rows = new ArrayList<>();

  PartitionWriter(SinkOptions options, int partition, long batchId) {
    this.options = options;
    this.partition = partition;
    this.batchId = batchId;
    // the producer's start (login, fencing, marker) overlaps the task's computation
    TransactionalPartition.of(options, partition).prepare();
  }

  @Override
  public void write(InternalRow row) {
    int topic = options.topicColumn();
    if (!row.isNullAt(topic) && row.getUTF8String(topic).numBytes() > 0) {
      rows.add(row.copy()); // few, wide rows: one per kind and topic of a processor call
    }
  }

  @Override
  public WriterCommitMessage commit() throws WriteFailed {
    if (rows.isEmpty()) {
      return new PartitionWritten(partition, 0, false);
    }
    return TransactionalPartition.of(options, partition).write(batchId, rows);
  }

  @Override
  public void abort() {
    rows.clear(); // an open transaction is aborted where it failed, or fenced by the retry
  }

  @Override
  public void close() {
    rows.clear();
  }
}
