"""Machine records on Kafka: their Spark schema, and a streaming source of them, bucketed.

A record is `{thing, quantity, phenomenonTime, result}`; a joined pair on machine.out carries the
same four fields (plus `left` and `right`), so both topics are read the same way.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from statestream.config import Settings
from statestream.jobs.kafka_input import ReadOptions, committed_stream, read_limits
from statestream.spark.bucket_labels import bucket_labels

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
    """`topic` (read_committed) as rows (bucket, key, value, partition, offset), keys and values
    as Kafka gave them (binary).

    `bucket` stands for a hash of the key's thing (its text up to the first dot) modulo
    `buckets`, −1 without a key: many things are grouped into one stateful call, and a thing's
    records always meet in the same one. The processors decode the values
    (`jobs.record_decoding`), which checks that a record's key is its `thing.quantity`. The
    buckets' labels are spread evenly over the shuffle partitions
    (`statestream.spark.bucket_labels`).
    """
    rows = committed_stream(
        spark,
        settings,
        topic,
        starting_offsets=starting_offsets,
        max_offsets_per_trigger=max_offsets_per_trigger,
    )
    key = F.col("key").cast("string")
    index = F.pmod(F.xxhash64(F.substring_index(key, ".", 1)), F.lit(buckets))
    labels = F.array(*(F.lit(label) for label in bucket_labels(buckets)))
    bucket = F.when(key.isNotNull(), F.element_at(labels, (index + 1).cast("int")))
    return rows.select(
        bucket.otherwise(F.lit(-1)).cast("int").alias("bucket"),
        "key",
        "value",
        "partition",
        "offset",
    )


def section_records(
    spark: SparkSession, settings: Settings, topic: str, section: str, options: ReadOptions
) -> DataFrame:
    """`kafka_machine_records` of `topic` for a query of settings section `section`: its
    `buckets`, and its `max_offsets_per_trigger` unless the options set one."""
    buckets = getattr(settings, section).buckets
    return kafka_machine_records(
        spark, settings, topic, buckets=buckets, **read_limits(settings, section, options)
    )
