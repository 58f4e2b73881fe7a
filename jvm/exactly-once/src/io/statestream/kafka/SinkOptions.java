package io.statestream.kafka;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** What a task needs to write: the lineage, the Kafka client options, where the columns are. */
record SinkOptions(
    String query,
    String queryId,
    String commitsTopic,
    Map<String, String> kafka,
    int topicColumn,
    int keysColumn,
    int valuesColumn,
    long pauseAfterCommitMs,
    String failOnceFile,
    boolean faultAfterCommit)
    implements Serializable {

  static SinkOptions of(CaseInsensitiveStringMap options, String queryId, StructType schema) {
    Map<String, String> kafka = new HashMap<>();
    for (Map.Entry<String, String> option : options.asCaseSensitiveMap().entrySet()) {
      if (option.getKey().startsWith("kafka.")) {
        kafka.put(option.getKey().substring("kafka.".length()), option.getValue());
      }
    }
    if (!kafka.containsKey("bootstrap.servers")) {
      throw new IllegalArgumentException("option kafka.bootstrap.servers is required");
    }
    return new SinkOptions(
        required(options, "query"),
        queryId,
        required(options, "commits.topic"),
        kafka,
        column(schema, "topic"),
        column(schema, "keys"),
        column(schema, "values"),
        options.getLong("pause.after.commit.ms", 0L),
        options.getOrDefault("fault.fail.once.file", ""),
        options.getBoolean("fault.after.commit", false));
  }

  /** One checkpoint's output: batch ids start at 0 again with a new checkpoint (a new id). */
  String lineage() {
    return query + "." + queryId;
  }

  /** The transactional id and the marker key of one partition of the lineage. */
  String partitionKey(int partition) {
    return "statestream." + lineage() + "." + partition;
  }

  private static String required(CaseInsensitiveStringMap options, String name) {
    String value = options.get(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("option " + name + " is required");
    }
    return value;
  }

  private static int column(StructType schema, String name) {
    for (int i = 0; i < schema.fields().length; i++) {
      if (schema.fields()[i].name().equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException(
        "the output rows have no column " + name + ": " + schema.simpleString());
  }
}
