package io.statestream.kafka;

import java.io.IOException;

/** A task's transaction failed; the message names the query, partition, batch and cause. */
public final class WriteFailed extends IOException {
  WriteFailed(String message, Throwable cause) {
    super(message, cause);
  }
}
