"""Machine records on Kafka: their Spark schema, and a streaming source of them, bucketed.

A record is `{thing, quantity, phenomenonTime, result}`; a joined pair on machine.out carries the
same four fields (plus `left` and `right`), so both topics are read the same way.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from statestream.config import Settings

MACHINE_RECORD_SCHEMA = StructType(
    [
        StructField("thing", StringType()),
        StructField("quantity", StringType()),
        StructField("phenomenonTime", DoubleType()),  # epoch ms; a fraction is allowed
        StructField("result", DoubleType()),
    ]
)


def kafka_machine_records(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    *,
    buckets: int,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
) -> DataFrame:
    """`topic` (read_committed) as rows (bucket, key, value, partition, offset), values undecoded.

    `bucket` stands for a hash of the key's thing (its text up to the first dot) modulo
    `buckets`, −1 without a key: many things are grouped into one stateful call, and a thing's
    records always meet in the same one. The processors decode the values
    (`jobs.record_decoding`), which checks that a record's key is its `thing.quantity`.
    """
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options())
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .option("kafka.isolation.level", "read_committed")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    key = F.col("key").cast("string")
    index = F.pmod(F.xxhash64(F.substring_index(key, ".", 1)), F.lit(buckets))
    labels = F.array(*(F.lit(label) for label in bucket_labels(buckets)))
    bucket = F.when(key.isNotNull(), F.element_at(labels, (index + 1).cast("int")))
    return reader.load().select(
        bucket.otherwise(F.lit(-1)).cast("int").alias("bucket"),
        key.alias("key"),
        "value",
        "partition",
        "offset",
    )


def bucket_labels(buckets: int) -> list[int]:
    """The grouping key of each bucket: labels that Spark's hash partitioning spreads evenly.

    Spark places a group by Murmur3(key) modulo its shuffle partitions, and for keys 0…7 that is
    5 to 3 over 2 partitions. Label i is the first number after label i − 1 with
    Murmur3(n) mod 64 = i mod 64, so any partition count dividing 64 gets an equal share of the
    buckets when it divides their number. Labels depend on nothing else: they are state keys.
    """
    labels: list[int] = []
    candidate = 0
    for i in range(buckets):
        while _spark_partition(candidate, 64) != i % 64:
            candidate += 1
        labels.append(candidate)
        candidate += 1
    return labels


def _spark_partition(value: int, partitions: int) -> int:
    """The shuffle partition of int grouping key `value`: Murmur3_x86_32(value, seed 42) pmod n."""

    def rotate(x: int, bits: int) -> int:
        return ((x << bits) | (x >> (32 - bits))) & _MASK

    k = rotate((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h = (rotate(42 ^ k, 13) * 5 + 0xE6546B64) & _MASK
    h ^= 4  # the length in bytes
    h = (h ^ (h >> 16)) * 0x85EBCA6B & _MASK
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    signed = h - (1 << 32) if h & 0x80000000 else h
    return signed % partitions


_MASK = 0xFFFFFFFF
