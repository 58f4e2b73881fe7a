"""The limit beside `bench pipeline`'s join: the same input passed through the same sink unchanged.

A stateless query reads the join's throughput topic and writes each record, key and value as
they are, through the exactly-once sink the join writes through: no Python worker, no shuffle,
no state. Its records/s (`passthrough_records_per_s`) is what Spark and Kafka alone do with this
input on this machine, and the join's records/s as a fraction of it (`join_to_passthrough`) is
what the join keeps of that: 1 would be a join that costs nothing beyond reading and writing.

What makes the two comparable, within one run and one SparkSession:

- the same input: it reads the very topic the join's throughput part read (the same records,
  partitions and offsets), with the jobs' Kafka source (`jobs.kafka_input.committed_stream`:
  read_committed, the same client options), availableNow and the same records per batch;
- the same sink with as many writing tasks: it reads in as many tasks as the session's shuffle
  partitions, as the join does, and each task writes its records of a batch in one Kafka
  transaction with its commit marker (`exactly_once.sink.start_query`), to an output topic and
  with a checkpoint of its own;
- timed the same way: wall time from starting the query until it stops, planning and first
  batch included, and records/s after the first batch;
- warmed up the same way: a pass-through query of its own first runs over the join's warm-up
  records (on a topic of its own), as the join's warm-up query did before the join's part.

It runs right after the join's throughput part instead of alternating with it: the join's figure
stays measured where it always was (comparable with the recorded runs, and running the join twice
would double the part), and what going second may give the pass-through (a JVM that has run
longer) raises the limit, so the ratio errs low rather than high. After the clock stops, the
output is checked: a read_committed count and a sum of hashes of (key, value) over the output and
the input topic must be equal (`passthrough_unchanged`): every record once, byte for byte.

One difference is by design: the join packs a call's records into a few wide rows
(`exactly_once.packed_rows`), while a query without Python has one packed row per record, as
`exactly_once.write_exactly_once` writes any DataFrame; the sink unpacks each.

    figures = passthrough(bench, 2_002_325, join_records_per_s)   # bench: the pipeline bench's
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from benchmarks.spark_queries import rate_after_first_batch
from statestream.config import Settings
from statestream.exactly_once.sink import QueryOptions, start_query
from statestream.jobs.kafka_input import committed_stream, read_limits
from statestream.services import grant_topics

# the parts whose topics `pipeline_bench` makes (bench.<run>.<part>.<in|out|late|dlq>): their
# `out` topics hold the warm-up's and the measured pass-through's records
PASSTHROUGH_PARTS = ("passthrough_warmup", "passthrough")


class BenchOptions(Protocol):  # what `pipeline_bench.PipelineBenchOptions` offers this part
    @property
    def max_offsets_per_trigger(self) -> int: ...

    @property
    def warmup_records(self) -> int: ...


class BenchRun(Protocol):  # what `pipeline_bench._BenchRun` offers this part
    @property
    def spark(self) -> SparkSession: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def names(self) -> dict[str, str]: ...

    @property
    def options(self) -> BenchOptions: ...

    @property
    def tmp(self) -> Path: ...

    def say(self, text: str) -> None: ...


class Fingerprint(NamedTuple):
    """A topic's records as a read_committed consumer sees them: how many, and the sum of each
    record's hash of (key, value) — equal for the same records in any order."""

    records: int
    hash_sum: int


def passthrough(bench: BenchRun, records: int, join_records_per_s: int) -> dict[str, Any]:
    """The warm-up, the measured pass-through of the throughput topic (`records` records), and
    its check; the figures `passthrough_*` and `join_to_passthrough`."""
    if bench.options.warmup_records:
        bench.say(f"warming up the pass-through: {bench.options.warmup_records:,} records")
        _pass_all(bench, "warmup_in", "passthrough_warmup", None)
    per_batch = bench.options.max_offsets_per_trigger
    bench.say(
        f"pass-through: the same {records:,} records, unchanged, through the same sink "
        f"(availableNow, ≤ {per_batch:,} records per batch)"
    )
    progress, seconds = _pass_all(bench, "throughput_in", "passthrough", per_batch)
    bench.say("checking the pass-through's output (read_committed) against its input")
    written = fingerprint(bench.spark, bench.settings, bench.names["passthrough_out"])
    read = fingerprint(bench.spark, bench.settings, bench.names["throughput_in"])
    return passthrough_figures(records, seconds, progress, join_records_per_s) | checked(
        written, read
    )


def passthrough_figures(
    records: int, seconds: float, progress: list[dict], join_records_per_s: int
) -> dict[str, Any]:
    """The pass-through's figures, timed as the join's throughput part is, and the ratio.

    >>> progress = [{"numInputRows": 500, "durationMs": {"triggerExecution": 2000}}] * 2
    >>> figures = passthrough_figures(1_000, 4.0, progress, 125)
    >>> figures["passthrough_records_per_s"], figures["join_to_passthrough"]
    (250, 0.5)
    """
    records_per_s = round(records / seconds) if seconds > 0 else 0
    return {
        "passthrough_records": records,
        "passthrough_seconds": round(seconds, 2),
        "passthrough_batches": len(progress),
        "passthrough_records_per_s": records_per_s,
        "passthrough_sustained_records_per_s": rate_after_first_batch(progress),
        "join_to_passthrough": join_to_passthrough(join_records_per_s, records_per_s),
    }


def join_to_passthrough(
    join_records_per_s: float, passthrough_records_per_s: float
) -> float | None:
    """The join's records/s as a fraction of the pass-through's, to three places (None when the
    pass-through has no rate).

    >>> join_to_passthrough(150_000, 400_000)
    0.375
    """
    if passthrough_records_per_s <= 0:
        return None
    return round(join_records_per_s / passthrough_records_per_s, 3)


def checked(written: Fingerprint, read: Fingerprint) -> dict[str, Any]:
    """The records the pass-through wrote, and whether they are its input's, each once and
    unchanged (same count and same sum of hashes of key and value)."""
    return {"passthrough_records_out": written.records, "passthrough_unchanged": written == read}


def _pass_all(
    bench: BenchRun, source: str, part: str, max_offsets_per_trigger: int | None
) -> tuple[list[dict], float]:
    """Pass all of the topic `bench.names[source]` to `part`'s output topic with availableNow:
    the batches' progress and the seconds from starting the query until it stopped."""
    topic, output = bench.names[source], bench.names[f"{part}_out"]
    grant_topics(bench.settings, [topic, output])  # the jobs' user reads and writes them
    run_id = output.split(".")[1]
    options = QueryOptions(
        available_now=True,
        max_offsets_per_trigger=max_offsets_per_trigger,
        checkpoint=bench.tmp / part,
        query_name=f"bench-{part.replace('_', '-')}-{run_id}",
    )
    started = time.perf_counter()
    query = start_passthrough_query(bench.spark, bench.settings, topic, output, options)
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the {part} query failed: {query.exception()}")
    return [json.loads(p.json) for p in query.recentProgress], seconds


def start_passthrough_query(
    spark: SparkSession, settings: Settings, topic: str, output: str, options: QueryOptions
) -> StreamingQuery:
    """Start a query writing each record of `topic` unchanged to `output`, exactly once.

    It reads as the join reads (`committed_stream` with the join section's read limits unless
    `options` set them) in as many tasks as the session's shuffle partitions, like the join's
    `bucketed_records`, and writes through the sink the join writes through.
    """
    rows = committed_stream(spark, settings, topic, **read_limits(settings, "join", options))
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    assert partitions is not None  # a setting with a default (200): never unset
    frame = packed_unchanged(rows.coalesce(int(partitions)), output)
    run = options.query_run(settings, settings.join.trigger_interval_s)
    return start_query(frame, settings, run)


def packed_unchanged(rows: DataFrame, topic: str) -> DataFrame:
    """Spark's Kafka rows as the sink's packed rows (`exactly_once.packed_rows`), one per record:
    to `topic`, its key as it was (a UTF-8 text, or none) and its value's bytes as they were
    (JSON text, which holds no raw newline: the packed format's separator)."""
    key_text = F.to_json(F.array(F.col("key").cast("string")))  # ["R0815.p"] or [null]
    return rows.select(
        F.lit("record").alias("kind"),
        F.lit(topic).alias("topic"),
        F.lit(1).cast("long").alias("count"),
        F.regexp_replace(key_text, r"^\[(.*)\]$", "[[$1,1]]").alias("keys"),
        F.col("value").alias("values"),
    )


def fingerprint(spark: SparkSession, settings: Settings, topic: str) -> Fingerprint:
    """`topic`'s `Fingerprint`, read in one Spark batch job (read_committed, as the bench's
    admin: its own topics)."""
    rows = (
        spark.read.format("kafka")
        .options(**settings.kafka.spark_options("admin"))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    # murmur3's 32-bit hash summed as a long: no overflow for billions of records
    found = rows.agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.hash("key", "value").cast("long")).alias("hash_sum"),
    ).first()
    assert found is not None  # an aggregate without grouping has one row
    return Fingerprint(int(found["records"]), int(found["hash_sum"] or 0))
