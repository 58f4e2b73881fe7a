package io.statestream.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactional producer of one partition of one query lineage, kept in its JVM across
 * batches: {@code initTransactions} and the marker read happen when the producer is new, not per
 * batch. A stateful task runs where its partition's state is loaded, so the producer stays put.
 *
 * <p>A new producer is started when the task's writer is created ({@link #prepare}), in a thread
 * of its own, while the task computes its rows: its login, fencing and marker read (up to ~0.6 s
 * on a query's first batch) overlap the computation instead of following it. The write waits for
 * it; fencing still comes before the marker read, and both before any record is sent.
 */
final class TransactionalPartition {
  private static final Logger LOG = LoggerFactory.getLogger("statestream.kafka");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, TransactionalPartition> OPEN = new ConcurrentHashMap<>();
  private static final long IDLE_NS = Duration.ofMinutes(10).toNanos();
  private static final ExecutorService STARTER =
      Executors.newCachedThreadPool(
          task -> {
            Thread thread = new Thread(task, "statestream-producer-start");
            thread.setDaemon(true);
            return thread;
          });

  private final SinkOptions options;
  private final int partition;
  private final String id;
  private KafkaProducer<byte[], byte[]> producer;
  private CompletableFuture<Started> starting; // a producer being started by prepare()
  private long lastCommitted = -1;
  private final AtomicReference<String> sendError = new AtomicReference<>();
  private volatile long lastUsed = System.nanoTime();

  private TransactionalPartition(SinkOptions options, int partition) {
    this.options = options;
    this.partition = partition;
    this.id = options.partitionKey(partition);
  }

  static TransactionalPartition of(SinkOptions options, int partition) {
    closeIdle();
    return OPEN.computeIfAbsent(
        options.partitionKey(partition), key -> new TransactionalPartition(options, partition));
  }

  /** Start a producer in the background unless one is open or being started. */
  synchronized void prepare() {
    lastUsed = System.nanoTime();
    if (producer == null && starting == null) {
      starting = CompletableFuture.supplyAsync(this::started, STARTER);
    }
  }

  /** Write batch `batchId`'s records and marker in one transaction, unless it was committed. */
  synchronized PartitionWritten write(long batchId, List<InternalRow> rows) throws WriteFailed {
    lastUsed = System.nanoTime();
    boolean cached = producer != null;
    try {
      if (!cached) {
        start();
      }
      if (batchId <= lastCommitted) {
        LOG.warn("batch {} of {} was committed before; skipped", batchId, id);
        return new PartitionWritten(partition, 0, true);
      }
      return new PartitionWritten(partition, send(batchId, rows), false);
    } catch (ProducerFencedException | InvalidProducerEpochException e) {
      discard();
      if (cached) { // another attempt or executor took the id over since: start afresh once
        return write(batchId, rows);
      }
      throw failed(batchId, e);
    } catch (RuntimeException | IOException e) {
      abortOrDiscard();
      throw failed(batchId, e);
    }
  }

  /** The producer and its last committed batch, started anew or by {@link #prepare}. */
  private record Started(KafkaProducer<byte[], byte[]> producer, long lastCommitted) {}

  private void start() throws IOException {
    Started started;
    if (starting == null) {
      started = startNew();
    } else {
      try {
        started = starting.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
      } finally {
        starting = null;
      }
    }
    producer = started.producer(); // only a producer that has fenced and read its marker is kept
    lastCommitted = started.lastCommitted();
  }

  private Started started() {
    try {
      return startNew();
    } catch (IOException e) {
      throw new CompletionException(e);
    }
  }

  private Started startNew() throws IOException {
    Map<String, Object> config = new HashMap<>(options.kafka());
    config.put("transactional.id", id);
    config.put("enable.idempotence", "true");
    config.put("acks", "all");
    config.put("linger.ms", "5");
    config.put("batch.size", String.valueOf(1 << 20));
    config.put("buffer.memory", String.valueOf(64L << 20));
    config.put("compression.type", "lz4");
    config.put("max.block.ms", "30000");
    // Kafka's default partitioner for keyed records: murmur2, as the connector's producer
    // (librdkafka's murmur2_random), so a series keeps one partition whoever wrote it
    KafkaProducer<byte[], byte[]> fresh =
        new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    try {
      fresh.initTransactions(); // fences every earlier attempt; the broker aborts its transaction
      return new Started(fresh, CommitMarkers.lastCommitted(options, partition));
    } catch (RuntimeException | IOException e) {
      fresh.close(Duration.ZERO);
      throw e;
    }
  }

  private long send(long batchId, List<InternalRow> rows) throws IOException {
    sendError.set(null);
    producer.beginTransaction();
    long sent = 0;
    for (InternalRow row : rows) {
      String topic = row.getUTF8String(options.topicColumn()).toString();
      Callback onError = noteError(topic);
      sent +=
          unpack(
              row.getUTF8String(options.keysColumn()).toString(),
              row.getBinary(options.valuesColumn()),
              (key, value) -> {
                producer.send(new ProducerRecord<>(topic, key, value), onError);
                failEarly();
              });
      if (!options.faultAfterCommit()) {
        failOnceIfAsked(batchId);
      }
    }
    byte[] marker = CommitMarkers.marker(options, partition, batchId);
    producer.send(
        new ProducerRecord<>(options.commitsTopic(), id.getBytes(StandardCharsets.UTF_8), marker));
    producer.commitTransaction();
    lastCommitted = batchId;
    if (options.faultAfterCommit()) {
      failOnceIfAsked(batchId);
    }
    return sent;
  }

  /**
   * Stop at a record's error: a send to a topic the user may not write fails at once (its
   * callback runs inside send), but each further record would wait a metadata round for it.
   */
  private void failEarly() throws IOException {
    String error = sendError.get();
    if (error != null) {
      throw new IOException(error);
    }
  }

  /** Keeps the first record's error: the transaction's own error says only "error state". */
  private Callback noteError(String topic) {
    return (metadata, error) -> {
      if (error != null) {
        sendError.compareAndSet(null, "writing to topic " + topic + ": " + error.getMessage());
      }
    };
  }

  /** Takes the records of a packed row, one at a time ({@link #unpack}). */
  interface PackedRecords {
    void add(byte[] key, byte[] value) throws IOException;
  }

  /**
   * The records of one packed row, in order, handed to {@code records}; returns how many. The
   * row's format is written by {@code statestream.exactly_once.packed_rows} in Python: {@code
   * keys} is a JSON array of [key, how many records in a row have it] (a null key: a record
   * without key), {@code values} the records' values one per line, without a newline after the
   * last. Held to tests/exactly_once/golden/packed_rows.bin, which Python writes.
   */
  static long unpack(String keys, byte[] values, PackedRecords records) throws IOException {
    long count = 0;
    int position = 0;
    for (JsonNode run : JSON.readTree(keys)) {
      byte[] key = run.get(0).isNull() ? null : run.get(0).asText().getBytes(StandardCharsets.UTF_8);
      for (long i = run.get(1).asLong(); i > 0; i--) {
        int end = lineEnd(values, position);
        records.add(key, java.util.Arrays.copyOfRange(values, position, end));
        position = end + 1;
        count++;
      }
    }
    return count;
  }

  private static int lineEnd(byte[] values, int from) {
    for (int i = from; i < values.length; i++) {
      if (values[i] == '\n') {
        return i;
      }
    }
    return values.length;
  }

  /**
   * Fault injection for tests: the first writer to create the file fails, as a task that dies
   * inside its open transaction (left open, not aborted) or, with fault.after.commit, just after
   * its commit (its producer is dropped, so the retry must find the marker to skip the batch).
   */
  private void failOnceIfAsked(long batchId) throws IOException {
    if (options.failOnceFile().isEmpty()) {
      return;
    }
    try {
      Files.createFile(Path.of(options.failOnceFile()));
    } catch (java.nio.file.FileAlreadyExistsException e) {
      return;
    }
    producer.flush(); // the records are on the broker, inside the open transaction
    producer = null; // left open, as by a task that died: the retry's initTransactions aborts it
    throw new IOException("fault injection: a task of batch " + batchId + " failed");
  }

  private WriteFailed failed(long batchId, Exception cause) {
    String reason = sendError.get();
    if (reason == null) {
      reason = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    }
    return new WriteFailed(
        "Kafka transaction of batch "
            + batchId
            + ", partition "
            + partition
            + " of query "
            + options.lineage()
            + " failed: "
            + reason,
        cause);
  }

  /**
   * After a failed write: abort the open transaction, or, when that is not possible (fenced,
   * fatal, a commit whose outcome is unknown), drop the producer, so that the next write fences
   * and reads its marker again rather than trusting what this one believed was committed.
   */
  private void abortOrDiscard() {
    if (producer == null) {
      return;
    }
    try {
      producer.abortTransaction();
    } catch (RuntimeException e) {
      discard();
    }
  }

  private void discard() {
    if (producer != null) {
      producer.close(Duration.ZERO);
      producer = null;
    }
    if (starting != null) { // a producer started for a write that never came: close it too
      try {
        starting.join().producer().close(Duration.ZERO);
      } catch (CompletionException e) {
        // it did not start: nothing to close
      }
      starting = null;
    }
  }

  /** Close every producer of this JVM; the next write starts afresh (fences, reads its marker). */
  static void closeAll() {
    OPEN.values().removeIf(open -> open.closeIfIdle(Long.MAX_VALUE));
  }

  private static void closeIdle() {
    long now = System.nanoTime();
    OPEN.values().removeIf(open -> now - open.lastUsed > IDLE_NS && open.closeIfIdle(now));
  }

  private synchronized boolean closeIfIdle(long now) {
    if (now != Long.MAX_VALUE && now - lastUsed <= IDLE_NS) {
      return false;
    }
    discard();
    return true;
  }
}
