"""Machine records on Kafka: their Spark schema, and a streaming source of parsed records.

A record is `{thing, quantity, phenomenonTime, result}`; a joined pair on machine.out carries the
same four fields (plus `left` and `right`), so both topics are read the same way.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
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
    envelope: str = "none",
) -> DataFrame:
    """`topic` (read_committed) as rows (bucket, thing, quantity, t, v, partition, offset, raw).

    `bucket` is a hash of the thing modulo `buckets` (−1 without a thing), for grouping many
    things into one stateful call; `raw` is the value only when a field is missing, for the
    dead-letter output. `envelope` says how values are encoded (`jobs.record_decoding`).
    """
    from statestream.jobs.record_decoding import decoded_records  # it needs this module's schema

    reader = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options())
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .option("kafka.isolation.level", "read_committed")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    parsed = decoded_records(reader.load(), envelope)
    complete = _all_present("r.thing", "r.quantity", "r.phenomenonTime", "r.result")
    bucket = F.when(F.col("r.thing").isNotNull(), F.pmod(F.xxhash64("r.thing"), buckets))
    return parsed.select(
        bucket.otherwise(F.lit(-1)).cast("int").alias("bucket"),
        F.col("r.thing").alias("thing"),
        F.col("r.quantity").alias("quantity"),
        F.col("r.phenomenonTime").alias("t"),
        F.col("r.result").alias("v"),
        "partition",
        "offset",
        F.when(complete, F.lit(None).cast("string")).otherwise(F.col("raw")).alias("raw"),
    )


def _all_present(*names: str) -> Column:
    condition = F.lit(True)
    for name in names:
        condition = condition & F.col(name).isNotNull()
    return condition
