package io.statestream.kafka;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.CRC32;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.PartitionInfo;

/**
 * librdkafka's default partitioner (consistent_random: CRC-32 of the key modulo the partitions),
 * so a key lands in the same partition whether statestream's Python clients or this sink wrote
 * it: a series stays in one partition, in order.
 */
public final class Crc32Partitioner implements Partitioner {
  @Override
  public int partition(
      String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes, Cluster cluster) {
    List<PartitionInfo> partitions = cluster.partitionsForTopic(topic);
    int count = partitions.size();
    if (keyBytes == null) {
      return ThreadLocalRandom.current().nextInt(count);
    }
    return partitionOf(keyBytes, count);
  }

  static int partitionOf(byte[] key, int count) {
    CRC32 crc = new CRC32();
    crc.update(key);
    return (int) (crc.getValue() % count);
  }

  @Override
  public void close() {}

  @Override
  public void configure(Map<String, ?> configs) {}
}
