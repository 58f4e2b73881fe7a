package io.statestream.status;

import java.util.StringJoiner;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * A query's recent progress reports after a given batch, as one JSON array: one py4j call where
 * PySpark's {@code recentProgress} makes one per report (up to 100) every time it is read.
 */
public final class ProgressReports {
  private ProgressReports() {}

  /** The reports of {@code query}'s recent batches with an id above {@code batchId}, oldest first. */
  public static String after(StreamingQuery query, long batchId) {
    StringJoiner reports = new StringJoiner(",", "[", "]");
    for (StreamingQueryProgress progress : query.recentProgress()) {
      if (progress.batchId() > batchId) {
        reports.add(progress.json());
      }
    }
    return reports.toString();
  }
}
