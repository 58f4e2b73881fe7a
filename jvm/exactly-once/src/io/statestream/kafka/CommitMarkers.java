package io.statestream.kafka;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The commit markers on the commits topic (one partition, compacted): key = a partition's
 * transactional id, value = {"query", "partition", "batch_id"} (read in Python by {@code
 * statestream.exactly_once.markers}; both sides held to tests/exactly_once/golden/
 * commit_marker.json). A partition's markers grow with its batch ids, so its last marker is the
 * last record with its key: the topic is read backwards, a window at a time, and usually only its
 * last window.
 */
final class CommitMarkers {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int WINDOW = 20_000;
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(60);

  private CommitMarkers() {}

  static byte[] marker(SinkOptions options, int partition, long batchId) {
    Map<String, Object> value = new HashMap<>();
    value.put("query", options.lineage());
    value.put("partition", partition);
    value.put("batch_id", batchId);
    try {
      return JSON.writeValueAsBytes(value);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The batch id a marker's value holds. */
  static long batchId(byte[] marker) throws IOException {
    return JSON.readTree(marker).get("batch_id").asLong();
  }

  /** The last batch id committed by this partition of the lineage; -1 if none. */
  static long lastCommitted(SinkOptions options, int partition) throws IOException {
    byte[] key = options.partitionKey(partition).getBytes(StandardCharsets.UTF_8);
    Map<String, Object> config = new HashMap<>(options.kafka());
    config.put("isolation.level", "read_committed");
    config.put("enable.auto.commit", "false");
    config.remove("group.id");
    TopicPartition commits = new TopicPartition(options.commitsTopic(), 0);
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      consumer.assign(List.of(commits));
      long low = consumer.beginningOffsets(List.of(commits)).get(commits);
      long stop = consumer.endOffsets(List.of(commits)).get(commits); // the last stable offset
      long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
      while (stop > low) {
        long start = Math.max(low, stop - WINDOW);
        long found = lastIn(consumer, commits, start, stop, key, deadline);
        if (found >= 0) {
          return found;
        }
        stop = start;
      }
      return -1;
    }
  }

  private static long lastIn(
      KafkaConsumer<byte[], byte[]> consumer,
      TopicPartition commits,
      long start,
      long stop,
      byte[] key,
      long deadline)
      throws IOException {
    consumer.seek(commits, start);
    long found = -1;
    while (consumer.position(commits) < stop) {
      if (System.nanoTime() > deadline) {
        throw new IOException("timed out reading the commits topic " + commits.topic());
      }
      for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
        if (record.offset() < stop && Arrays.equals(record.key(), key)) {
          found = Math.max(found, batchId(record.value()));
        }
      }
    }
    return found;
  }
}
