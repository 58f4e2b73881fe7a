package io.statestream.status;

/**
 * The rare events of a streaming query's run, as plain values, for a listener written in Python
 * ({@code statestream.jobs.status}): {@link QueryProgressFiles} hands them on. Progress reports,
 * the frequent events, it keeps itself.
 */
public interface QueryLifecycle {
  /** A run started; {@code name} is the query's name, or its id when it has none. */
  void started(String name, String runId);

  /** The run waits for data (Spark reports it every 10 s while there is none). */
  void idle(String runId);

  /** The run ended; {@code error} is null when it stopped, else its exception's first line. */
  void terminated(String runId, String error);
}
