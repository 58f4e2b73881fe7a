package io.statestream.kafka;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Adds up, per streaming query and batch, the bytes its tasks returned to the driver: Spark's own
 * task metric resultSize. It shows whether the driver is in the data path.
 *
 * <pre>
 *   ResultSizeListener.install(sparkContext);
 *   ResultSizeListener.bytes(queryId, batchId);   // -1 if no task of that batch ended
 * </pre>
 */
public final class ResultSizeListener extends SparkListener {
  private static final String QUERY_ID = "sql.streaming.queryId";
  private static final String BATCH_ID = "streaming.sql.batchId";
  private static final Map<Integer, String> STAGES = new ConcurrentHashMap<>();
  private static final Map<String, AtomicLong> BYTES = new ConcurrentHashMap<>();
  private static volatile boolean installed;

  public static synchronized void install(SparkContext context) {
    if (!installed) {
      context.addSparkListener(new ResultSizeListener());
      installed = true;
    }
  }

  public static long bytes(String queryId, long batchId) {
    AtomicLong total = BYTES.get(queryId + "/" + batchId);
    return total == null ? -1 : total.get();
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    if (event.properties() == null) {
      return;
    }
    String query = event.properties().getProperty(QUERY_ID);
    String batch = event.properties().getProperty(BATCH_ID);
    if (query != null && batch != null) {
      STAGES.put(event.stageInfo().stageId(), query + "/" + batch);
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    String batch = STAGES.get(event.stageId());
    if (batch != null && event.taskMetrics() != null) {
      BYTES.computeIfAbsent(batch, key -> new AtomicLong()).addAndGet(event.taskMetrics().resultSize());
    }
  }
}
