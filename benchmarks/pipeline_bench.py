"""`statestream bench pipeline`: the streaming join on real Kafka and Spark, end to end.

0. Warm-up: a join query over the first `warmup_records` of the input, on topics of its own, so
   that the JVM's compiled code and the Python workers are as in a job that has been running.
1. Throughput: the sample scaled to ≥ 2 M records over many machines is preloaded into a fresh
   topic; a new join query (the same code as `statestream run join`) processes it all with
   `availableNow`; records/s and pairs/s over the query's wall time (its planning and first
   batch included), and its output is checked against the spec's pairs. Then the limit beside
   it: the same topic passed through the same sink unchanged (`pipeline_passthrough`).
2. Latency: a second query runs continuously while records are produced at a fixed rate; a
   `read_committed` consumer timestamps each pair as it becomes visible. A pair's latency is that
   time minus the send time of the later of its two records.
3. Baseline: Spark's stream-stream join (watermarks plus a time range) over the first records
   of the same input (`baseline_records`: it is far slower), with its throughput and the spec's
   pairs of those records it finds, misses and adds.

Everything runs in this process against fresh topics, deleted at the end.
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from benchmarks.batch_times import batch_time_medians
from benchmarks.checkpoint_sizes import CheckpointSizes, thirds
from benchmarks.pair_latency import burst_seconds, certain_at, largest_burst, pair_latencies
from benchmarks.pair_watcher import PairWatcher
from benchmarks.pipeline_burst import burst
from benchmarks.pipeline_input import (
    ScaledRecords,
    compare_pairs,
    expected_pairs,
    pair_keys_from_json,
    produce,
    record_producer,
    scaled_sample,
    slice_size,
)
from benchmarks.pipeline_passthrough import PASSTHROUGH_PARTS, passthrough
from benchmarks.spark_figures import per_core, spark_figures
from benchmarks.spark_queries import ResultSizes, rate_after_first_batch, wait_for_first_batch
from benchmarks.windowed_join_baseline import run_baseline
from statestream.config import Settings
from statestream.join import JoinSpec
from statestream.queries.join.job import JoinJobOptions, spec_templates, start_join_query
from statestream.services import grant_access
from statestream.testing import read_committed

Say = Callable[[str], None]


@dataclass(frozen=True)
class PipelineBenchOptions:
    records: int = 2_000_000
    max_offsets_per_trigger: int = 500_000
    latency_rate: float = 10_000.0
    latency_seconds: float = 30.0
    trigger_interval_s: float | None = None  # default: the settings' join trigger interval
    warmup_records: int = 100_000
    # a first latency run on topics of its own: its figures are the cold ones (cold_latency_*)
    warmup_streaming_seconds: float = 10.0
    burst_pairs: int = 250_000  # the release the burst part makes certain at once; 0: no part
    baseline: bool = True
    baseline_records: int = 200_000
    baseline_range_s: float = 1.0
    baseline_watermark_s: float = 10.0
    passthrough: bool = True  # the limit: the same input through the same sink, unchanged


@dataclass(frozen=True)
class _BenchRun:
    """What every part of one bench run shares: Spark, settings, its topics and temporary folder."""

    spark: SparkSession
    settings: Settings
    names: dict[str, str]  # "<part>_<in|out|late|dlq>" → topic
    options: PipelineBenchOptions
    tmp: Path
    say: Say
    producer: Producer  # one for all parts: the latency and burst parts send on a running one

    def settings_of(self, part: str) -> Settings:
        """The settings with `part`'s topics as the join's input and outputs."""
        topics = self.settings.topics.model_copy(
            update={
                "machine_data": self.names[f"{part}_in"],
                "machine_out": self.names[f"{part}_out"],
                "late": self.names[f"{part}_late"],
                "dead_letter": self.names[f"{part}_dlq"],
            }
        )
        part_settings = self.settings.model_copy(update={"topics": topics})
        grant_access(part_settings)  # the join's user may use the part's topics
        return part_settings

    def specs(self, records: ScaledRecords) -> list[JoinSpec]:
        """The settings' join specs for the quantities of `records`."""
        quantities = sorted(set(records.quantities.tolist()))
        return [
            spec
            for template in spec_templates(self.settings)
            for spec in template.specs_for(quantities)
        ]

    def join_options(self, part: str, **options) -> JoinJobOptions:
        """Options of `part`'s join query: its own name and checkpoint, and `options`."""
        run_id = self.names[f"{part}_in"].split(".")[1]
        return JoinJobOptions(
            query_name=f"bench-{part}-{run_id}", checkpoint=self.tmp / part, **options
        )


def run(spark: SparkSession, settings: Settings, options: PipelineBenchOptions, say: Say) -> dict:
    """All three parts; the figures as one JSON-ready dict."""
    run_id = uuid.uuid4().hex[:8]
    with (
        tempfile.TemporaryDirectory(prefix="statestream-bench-") as tmp,
        _topics(settings, run_id) as names,
    ):
        say(f"scaling the sample to {options.records:,} records")
        records = scaled_sample(options.records)
        bench = _BenchRun(
            spark, settings, names, options, Path(tmp), say, record_producer(settings)
        )
        expected = expected_pairs(records, bench.specs(records))
        gc.freeze()  # the bench's own millions of objects: not for the writer's collections
        ResultSizes.install(spark)
        figures: dict = spark_figures(spark, settings)
        try:
            if options.warmup_records:
                figures |= _warm_up(bench, records.head(options.warmup_records))
            figures |= _throughput(bench, records, expected)
            figures["records_per_s_per_core"] = per_core(figures)
            if options.passthrough:  # right after the join's part: see pipeline_passthrough
                figures |= passthrough(bench, len(records), figures["records_per_s"])
            if options.warmup_streaming_seconds:
                figures |= _cold_latency(bench, options.warmup_streaming_seconds)
            figures |= _latency(bench)
            if options.burst_pairs:
                figures |= burst(bench, options.burst_pairs)
            if options.baseline:
                figures |= _baseline(bench, records, expected)
            figures["driver_result_bytes_per_batch"] = max(
                figures["driver_result_bytes"]
                + figures["latency_driver_result_bytes"]
                + figures.get("burst_driver_result_bytes", [])
            )
        finally:
            _unload_state_stores(spark)
    return figures


def _unload_state_stores(spark: SparkSession) -> None:
    """Close the stopped queries' state stores now, before their checkpoints are deleted.

    Otherwise Spark's background maintenance closes them later and writes a last RocksDB
    snapshot into a checkpoint folder the bench has already removed, which leaves it behind.
    (The next query's state stores start the maintenance again.)
    """
    spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    spark._jvm.io.statestream.kafka.ExactlyOnceKafkaSink.closeProducers()  # and their threads


_PARTS = ("warmup", "throughput", "cold", "latency", "burst", "baseline", *PASSTHROUGH_PARTS)


@contextmanager
def _topics(settings: Settings, run_id: str) -> Iterator[dict[str, str]]:
    names = {
        f"{part}_{kind}": f"bench.{run_id}.{part}.{kind}"
        for part in _PARTS
        for kind in ("in", "out", "late", "dlq")
    }
    admin = AdminClient(settings.kafka.client_config())
    new = [
        NewTopic(
            name,
            settings.topics.machine_data_partitions
            if key.endswith("_in")
            else settings.topics.machine_out_partitions,
            1,
        )
        for key, name in names.items()
    ]
    for future in admin.create_topics(new).values():
        future.result()
    try:
        yield names
    finally:
        for future in admin.delete_topics(list(names.values())).values():
            future.exception()


def _warm_up(bench: _BenchRun, records: ScaledRecords) -> dict:
    """Join `records` on the warm-up topics; the seconds it took."""
    bench.say(f"warming up: joining {len(records):,} records on topics of their own")
    produce(bench.settings, bench.names["warmup_in"], records, producer=bench.producer)
    _, seconds, _ = _join_all(bench, "warmup")
    return {"warmup_records": len(records), "warmup_seconds": round(seconds, 2)}


def _join_all(
    bench: _BenchRun, part: str, max_offsets_per_trigger: int | None = None
) -> tuple[list[dict], float, list[int]]:
    """Join all of `part`'s input topic with availableNow: the batches' progress, the seconds,
    and the bytes each batch's tasks returned to the driver."""
    started = time.perf_counter()
    query = start_join_query(
        bench.spark,
        bench.settings_of(part),
        bench.join_options(
            part, available_now=True, max_offsets_per_trigger=max_offsets_per_trigger
        ),
    )
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the {part} join query failed: {query.exception()}")
    progress = query.recentProgress
    return progress, seconds, ResultSizes.of(bench.spark, query.id, len(progress))


def _throughput(bench: _BenchRun, records: ScaledRecords, expected: pd.DataFrame) -> dict:
    bench.say(f"producing {len(records):,} records of {records.thing_count} machines to Kafka")
    produce(bench.settings, bench.names["throughput_in"], records, producer=bench.producer)
    per_batch = bench.options.max_offsets_per_trigger
    bench.say(f"joining them (availableNow, ≤ {per_batch:,} records per batch)")
    progress, seconds, result_bytes = _join_all(bench, "throughput", per_batch)
    bench.say("reading the pairs back (read_committed) and checking them against the spec")
    got = pair_keys_from_json(
        read_committed(bench.settings, bench.names["throughput_out"], timeout_s=300)
    )
    _, missed, extra = compare_pairs(expected, got)
    state = [p["stateOperators"][0] for p in progress if p.get("stateOperators")]
    return {
        "records": len(records),
        "things": records.thing_count,
        "pairs": len(got),
        "expected_pairs": len(expected),
        "pairs_missed": missed,
        "pairs_extra": extra,
        "pairs_duplicated": len(got) - len(got.drop_duplicates()),
        "seconds": round(seconds, 2),
        "batches": len(progress),
        "records_per_s": round(len(records) / seconds),
        "sustained_records_per_s": rate_after_first_batch(progress),
        "pairs_per_s": round(len(got) / seconds),
        "batch_seconds": [round(p["durationMs"]["triggerExecution"] / 1000, 2) for p in progress],
        "batch_records": [p["numInputRows"] for p in progress],
        "driver_result_bytes": result_bytes,
        "state_rows": [int(op["numRowsTotal"]) for op in state],
        "state_bytes": [
            int((op.get("customMetrics") or {}).get("rocksdbSstFileSize", 0)) for op in state
        ],
    }


def _cold_latency(bench: _BenchRun, seconds: float) -> dict:
    """The latency part's run for `seconds` on topics of its own, before the measured one.

    The availableNow warm-up and throughput queries leave the small batches of a running query
    cold: in one process, a second latency run of 15 s had p50 / p99 0.36 / 0.61 s against
    0.50 / 1.08 s for the first, whose batches shrank from ~450 to ~270 ms over its first
    seconds. These are the first run's figures: a job's first seconds of streaming in its JVM.
    """
    figures = _latency(bench, "cold", seconds)
    return {
        "cold_latency_seconds": seconds,
        **{f"cold_{name}": figures[name] for name in _COLD_FIGURES},
    }


_COLD_FIGURES = ("latency_p50_s", "latency_p99_s", "latency_max_s", "latency_batch")


def _latency(bench: _BenchRun, part: str = "latency", seconds: float | None = None) -> dict:
    """Records produced at the latency rate for `seconds` (the options' latency_seconds) while
    `part`'s join query runs: latency and batch figures (`latency_*`)."""
    count = int(bench.options.latency_rate * (seconds or bench.options.latency_seconds))
    records = scaled_sample(count, seed=11).head(count)
    certain = certain_at(records, bench.specs(records), slice_size(bench.options.latency_rate))
    interval = bench.options.trigger_interval_s or bench.settings.join.trigger_interval_s
    options = bench.join_options(part, trigger_interval_s=interval)
    # every batch's progress, not Spark's last 100, for the batch figures of the whole run
    bench.spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(count))
    query = start_join_query(bench.spark, bench.settings_of(part), options)
    watcher = PairWatcher(bench.settings, bench.names[f"{part}_out"])
    watcher.start()
    try:
        wait_for_first_batch(query)
        label = "latency" if part == "latency" else f"{part} latency (not measured)"
        bench.say(
            f"{label}: {count:,} records at {bench.options.latency_rate:,.0f} "
            f"records/s, a batch every {interval} s"
        )
        assert options.checkpoint is not None
        with CheckpointSizes(options.checkpoint) as checkpoint:
            sent_at = produce(
                bench.settings,
                bench.names[f"{part}_in"],
                records,
                rate=bench.options.latency_rate,
                producer=bench.producer,
            )
        watcher.wait_for(len(certain), timeout_s=60)
    finally:
        watcher.stop()
        query.stop()
    batch_times = batch_time_medians([json.loads(p.json) for p in query.recentProgress])
    batches = query.lastProgress["batchId"] + 1 if query.lastProgress else 0
    pairs = pair_latencies(records, sent_at, certain, watcher.received())
    window = max(1, int(bench.options.latency_rate * interval))
    return {
        "latency_records": count,
        "latency_rate": bench.options.latency_rate,
        "latency_trigger_interval_s": interval,
        "latency_pairs": len(pairs.latency),
        "latency_pairs_expected": len(certain),
        **_percentiles("latency", pairs.latency),
        **_percentiles("latency_after_later_record", pairs.after_later_record),
        "latency_pairs_waiting_for_data": int(np.count_nonzero(pairs.waited > 0)),
        "latency_largest_burst": largest_burst(certain, window),
        "latency_burst_seconds": _rounded(burst_seconds(certain, window, pairs)),
        "latency_batch": batch_times,
        "latency_batches": batches,
        "latency_driver_result_bytes": ResultSizes.of(bench.spark, query.id, batches),
        "latency_checkpoint_bytes": thirds(checkpoint.samples),
        "latency_checkpoint_samples": checkpoint.samples,
    }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _percentiles(name: str, seconds: np.ndarray) -> dict[str, float | None]:
    """`name`_p50_s, _p99_s and _max_s of `seconds` (None when there are none)."""
    if not len(seconds):
        return {f"{name}_p50_s": None, f"{name}_p99_s": None, f"{name}_max_s": None}
    return {
        f"{name}_p50_s": round(float(np.percentile(seconds, 50)), 3),
        f"{name}_p99_s": round(float(np.percentile(seconds, 99)), 3),
        f"{name}_max_s": round(float(seconds.max()), 3),
    }


def _baseline(bench: _BenchRun, records: ScaledRecords, expected: pd.DataFrame) -> dict:
    """Spark's windowed join on the first `baseline_records` records of the same input."""
    count = min(bench.options.baseline_records, len(records))
    if count < len(records):
        records = records.head(count)
        expected = expected_pairs(records, bench.specs(records))
    produce(bench.settings, bench.names["baseline_in"], records, producer=bench.producer)
    bench.say(
        f"baseline: Spark's stream-stream join on the first {count:,} records, "
        f"±{bench.options.baseline_range_s} s, watermark {bench.options.baseline_watermark_s} s"
    )
    run = run_baseline(
        bench.spark,
        bench.settings,
        bench.names["baseline_in"],
        bench.tmp / "baseline",
        bench.options.baseline_range_s,
        bench.options.baseline_watermark_s,
        bench.options.max_offsets_per_trigger,
    )
    both, missed, extra = compare_pairs(expected, run.pairs)
    return {
        "baseline_records": count,
        "baseline_seconds": round(run.seconds, 2),
        "baseline_records_per_s": round(count / run.seconds),
        "baseline_pairs": len(run.pairs),
        "baseline_expected_pairs": len(expected),
        "baseline_pairs_found": both,
        "baseline_pairs_missed": missed,
        "baseline_pairs_extra": extra,
        "baseline_range_s": bench.options.baseline_range_s,
        "baseline_watermark_s": bench.options.baseline_watermark_s,
    }
