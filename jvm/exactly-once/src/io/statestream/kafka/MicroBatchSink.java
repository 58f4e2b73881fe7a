package io.statestream.kafka;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.streaming.Sink;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function2;
import scala.collection.Iterator;
import scala.collection.immutable.Range$;
import scala.reflect.ClassTag$;
import scala.runtime.BoxedUnit;

/**
 * The driver's side of the sink: for each micro-batch it runs the batch's already planned query
 * ({@code queryExecution().toRdd()}) in a job whose tasks write their own partition ({@link
 * PartitionWriter}) and return a few numbers each, never records, which it adds up.
 *
 * <p>A Spark 4.1 data source V2 sink would have its batch run by {@code Dataset.collect()}, a
 * second SQL execution inside the one the micro-batch already opens; each execution's start
 * event describes the plan, and for a streaming plan that means planning the whole query again
 * ({@code QueryExecution.explainString}), ~25-50 ms of the driver per batch before the job.
 * This sink runs the plan Spark has made for the batch, in the micro-batch's own execution.
 *
 * <p>The job is started with {@code SparkContext.runJob} and a task function that is an object of
 * its own class ({@link WriteTask}), not a lambda: Spark's closure cleaner reads a lambda's class
 * file with ASM at every job ({@code mapPartitionsWithIndex}, then {@code collect}), ~9 ms of the
 * stream thread per batch, on the batch's critical path; an object that is no closure it passes by.
 *
 * <p>No commit coordinator: Kafka's coordinator fences a task's earlier attempts (one
 * transactional id per partition), and a retried task is what is wanted when an attempt dies.
 */
final class MicroBatchSink implements Sink {
  private static final Logger LOG = LoggerFactory.getLogger("statestream.kafka");
  private static final String QUERY_ID = "sql.streaming.queryId"; // the stream thread's property
  private final CaseInsensitiveStringMap parameters;

  MicroBatchSink(CaseInsensitiveStringMap parameters) {
    this.parameters = parameters;
  }

  @Override
  public void addBatch(long batchId, Dataset<Row> data) {
    String queryId = data.sparkSession().sparkContext().getLocalProperty(QUERY_ID);
    if (queryId == null) {
      throw new IllegalStateException("addBatch outside a streaming query's thread");
    }
    SinkOptions options = SinkOptions.of(parameters, queryId, data.schema());
    RDD<InternalRow> plan =
        ((org.apache.spark.sql.classic.Dataset<Row>) data).queryExecution().toRdd();
    SparkContext context = data.sparkSession().sparkContext();
    PartitionWritten[] written = new PartitionWritten[plan.getNumPartitions()];
    Function2<Object, PartitionWritten, BoxedUnit> collect =
        (partition, result) -> {
          written[(Integer) partition] = result;
          return BoxedUnit.UNIT;
        };
    try {
      context.runJob(
          plan,
          new WriteTask(options, batchId),
          Range$.MODULE$.apply(0, written.length),
          collect,
          ClassTag$.MODULE$.apply(PartitionWritten.class));
    } catch (RuntimeException e) {
      LOG.warn("batch {} of {} failed; its open transactions are aborted", batchId, options.lineage());
      throw e;
    }
    committed(options, batchId, Arrays.asList(written));
  }

  private static void committed(SinkOptions options, long batchId, List<PartitionWritten> written) {
    long records = 0;
    int skipped = 0;
    for (PartitionWritten partition : written) {
      records += partition.records();
      skipped += partition.skipped() ? 1 : 0;
    }
    if (skipped > 0) {
      LOG.warn(
          "batch {} of {}: {} partition(s) were committed before; skipped",
          batchId,
          options.lineage(),
          skipped);
    }
    LOG.debug("batch {} of {}: {} records written", batchId, options.lineage(), records);
    if (options.pauseAfterCommitMs() > 0) { // fault injection: a window to crash in
      System.out.println("committed batch " + batchId + " to Kafka");
      System.out.flush();
      try {
        Thread.sleep(options.pauseAfterCommitMs());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String toString() {
    return "statestream exactly-once Kafka sink";
  }

  /** One task: its partition's rows through a {@link PartitionWriter}, committed or aborted. */
  private record WriteTask(SinkOptions options, long batchId)
      implements Function2<TaskContext, Iterator<InternalRow>, PartitionWritten>, Serializable {
    @Override
    public PartitionWritten apply(TaskContext task, Iterator<InternalRow> rows) {
      PartitionWriter writer = new PartitionWriter(options, task.partitionId(), batchId);
      try {
        while (rows.hasNext()) {
          writer.write(rows.next());
        }
        return (PartitionWritten) writer.commit();
      } catch (Throwable e) {
        writer.abort();
        throw e;
      } finally {
        writer.close();
      }
    }
  }
}
