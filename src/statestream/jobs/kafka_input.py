"""The one way statestream's jobs read Kafka: committed data only, at most so many per batch.

Every input topic is written in Kafka transactions (the connector's, or the exactly-once sink's
of the query before: `statestream.exactly_once`), so a job reads it `read_committed`: records of an
aborted or still open transaction never reach a query.
"""

from __future__ import annotations

from typing import Any, Protocol

from pyspark.sql import DataFrame, SparkSession

from statestream.config import Settings


def committed_stream(
    spark: SparkSession,
    settings: Settings,
    topics: str,
    *,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
) -> DataFrame:
    """Kafka `topics` (comma-separated) as a stream of Spark's Kafka rows, committed data only.

    `starting_offsets` is where a new query starts; `max_offsets_per_trigger` caps the records
    of one micro-batch (none or 0: no cap).
    """
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options("jobs"))
        .option("subscribe", topics)
        .option("startingOffsets", starting_offsets)
        .option("kafka.isolation.level", "read_committed")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


class ReadOptions(Protocol):
    """What a query's options say of how it reads (`exactly_once.sink.QueryOptions` has them)."""

    @property
    def starting_offsets(self) -> str: ...

    @property
    def max_offsets_per_trigger(self) -> int | None: ...


def read_limits(settings: Settings, section: str, options: ReadOptions) -> dict[str, Any]:
    """`committed_stream`'s `starting_offsets` and `max_offsets_per_trigger` for a query of the
    settings section `section`: the options' own cap, else the section's."""
    cap = options.max_offsets_per_trigger or getattr(settings, section).max_offsets_per_trigger
    return {"starting_offsets": options.starting_offsets, "max_offsets_per_trigger": cap}
