package io.statestream.kafka;

/**
 * A task's transaction failed; the message names the query, partition, batch and cause.
 * Unchecked, so that the sink's task function (a {@code scala.Function2}) throws it as it is: the
 * query's failure then names it, which `statestream run` prints as the one line of the failure.
 */
public final class WriteFailed extends RuntimeException {
  WriteFailed(String message, Throwable cause) {
    super(message, cause);
  }
}
