package io.statestream.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The figures `statestream status` shows, kept by a listener in the driver's JVM.
 *
 * <p>After each batch of a run it replaces {@code <folder>/<name>.<runId>.progress} with a JSON
 * object: {@code progress} (the batch's progress report, as Spark writes it), {@code input_rows}
 * (the run's input rows so far) and {@code metric_sums} (each numeric observed metric summed
 * over the run's batches). Which sums are totals and what a status shows is decided in Python
 * ({@code statestream.jobs.status}), which also gets the run's start, idle and end through
 * {@link QueryLifecycle} and keeps the run's status file.
 *
 * <p>Why not a listener in Python: PySpark hands it each progress report as a JVM object whose
 * every field is a py4j call back into the JVM. At five batches a second that took ~0.2 cores of
 * the driver's JVM and more of its Python, on a machine whose cores run the tasks too.
 *
 * <pre>
 *   spark.streams().addListener(new QueryProgressFiles("/data/status", lifecycle));
 * </pre>
 */
public final class QueryProgressFiles extends StreamingQueryListener {
  private static final Logger LOG = LoggerFactory.getLogger("statestream.status");
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Path folder;
  private final QueryLifecycle lifecycle;
  private final Map<String, Totals> runs = new ConcurrentHashMap<>();

  public QueryProgressFiles(String folder, QueryLifecycle lifecycle) {
    this.folder = Path.of(folder);
    this.lifecycle = lifecycle;
  }

  /** The run's sums so far: input rows, and each numeric observed metric. */
  private static final class Totals {
    long inputRows;
    final Map<String, Number> metrics = new TreeMap<>();

    void add(StreamingQueryProgress progress) {
      inputRows += progress.numInputRows();
      for (Row row : progress.observedMetrics().values()) {
        String[] names = row.schema().fieldNames();
        for (int i = 0; i < names.length; i++) {
          if (!row.isNullAt(i) && row.get(i) instanceof Number value) {
            metrics.merge(names[i], value, Totals::sum);
          }
        }
      }
    }

    private static Number sum(Number a, Number b) {
      boolean whole = (a instanceof Long || a instanceof Integer) && (b instanceof Long || b instanceof Integer);
      return whole ? (Number) (a.longValue() + b.longValue()) : (Number) (a.doubleValue() + b.doubleValue());
    }
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {
    String runId = event.runId().toString();
    runs.put(runId, new Totals());
    lifecycle.started(event.name() == null ? event.id().toString() : event.name(), runId);
  }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    StreamingQueryProgress progress = event.progress();
    Totals totals = runs.computeIfAbsent(progress.runId().toString(), id -> new Totals());
    try {
      ObjectNode file;
      synchronized (totals) {
        totals.add(progress);
        file = progressFile(progress.json(), totals.inputRows, totals.metrics);
      }
      String name = progress.name() == null ? progress.id().toString() : progress.name();
      write(folder.resolve(name + "." + progress.runId() + ".progress"), JSON.writeValueAsBytes(file));
    } catch (IOException | UncheckedIOException e) {
      LOG.warn("could not write the progress of query {}: {}", progress.name(), e.toString());
    }
  }

  /** A {@code .progress} file's content: read by Python's {@code statestream.jobs.status}. */
  private static ObjectNode progressFile(
      String progressJson, long inputRows, Map<String, Number> metricSums) throws IOException {
    ObjectNode file = JSON.createObjectNode();
    file.set("progress", JSON.readTree(progressJson));
    file.put("input_rows", inputRows);
    file.set("metric_sums", JSON.valueToTree(metricSums));
    return file;
  }

  /**
   * The bytes of a {@code .progress} file for a batch's progress report (Spark's JSON), the run's
   * input rows and its metric sums (a JSON object of numbers): what the golden test of the
   * status files compares (tests/jobs/golden/status).
   */
  public static byte[] progressFileContent(String progressJson, long inputRows, String metricSums)
      throws IOException {
    Map<String, Number> sums = new TreeMap<>();
    for (Map.Entry<String, JsonNode> sum : JSON.readTree(metricSums).properties()) {
      sums.put(sum.getKey(), sum.getValue().numberValue());
    }
    return JSON.writeValueAsBytes(progressFile(progressJson, inputRows, sums));
  }

  @Override
  public void onQueryIdle(QueryIdleEvent event) {
    lifecycle.idle(event.runId().toString());
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    runs.remove(event.runId().toString());
    String error = event.exception().isDefined() ? firstLine(event.exception().get()) : null;
    lifecycle.terminated(event.runId().toString(), error);
  }

  private static String firstLine(String text) {
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  /** Replace {@code path} at once: a reader sees the old file or the new one, never a part. */
  private static void write(Path path, byte[] content) throws IOException {
    Files.createDirectories(path.getParent());
    Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
    Files.write(tmp, content);
    Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
