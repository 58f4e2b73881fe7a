"""The largest release: a few records that make hundreds of thousands of pairs certain at once.

When a series pauses while the other goes on, the spec holds the other series' records until the
pause ends, then pairs them all at once (the sample does this twice; a fleet whose machines
pause in step does it at scale). This part builds that release on purpose: per thing a torque
record, then `k` speed records, which the join holds (each speed record's torque neighbours are
not certain yet); then one torque record per thing, after all of them, which makes every held
speed record's previous and next torque certain: 2k pairs per thing at once. It measures the time
from sending those records until a read_committed consumer sees every released pair.

    figures = burst(bench, 250_000)   # bench: the pipeline bench's run (Spark, topics, settings)
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Protocol

import numpy as np
from confluent_kafka import Producer

from benchmarks.pair_watcher import PairWatcher
from benchmarks.pipeline_input import ScaledRecords, joined_slices, produce
from benchmarks.spark_queries import ResultSizes, input_rows, wait_for_first_batch
from statestream.config import Settings
from statestream.join import JoinSpec
from statestream.queries.join.job import JoinJobOptions, start_join_query
from statestream.services._process import wait_until

BURST_THINGS = 1_000
LEFT, RIGHT = "actSpeed_C11", "vaTorque_C11"  # a pair of the default join specs
START_MS = 1_700_000_000_000
STEP_MS = 1_000
WAIT_S = 120.0


class BenchRun(Protocol):  # what `pipeline_bench._BenchRun` offers this part
    spark: object
    settings: Settings
    names: dict[str, str]
    producer: Producer

    def say(self, text: str) -> None: ...
    def specs(self, records: ScaledRecords) -> list[JoinSpec]: ...
    def settings_of(self, part: str) -> Settings: ...
    def join_options(self, part: str, **options) -> JoinJobOptions: ...


def burst_records(pairs: int, things: int = BURST_THINGS) -> tuple[ScaledRecords, ScaledRecords]:
    """(held, release) for a release of about `pairs` pairs over `things` things.

    held: per thing a torque record at START_MS and k speed records a second apart, all in time
    order across things; release: one torque record per thing a second after its last speed
    record. The release makes 2k − 1 pairs per thing certain (the first speed record's pair
    with the first torque record is certain before), so k = ⌈(pairs / things + 1) / 2⌉.
    """
    k = max(1, -(-(pairs + things) // (2 * things)))
    names = np.array([f"burst-{n:04d}" for n in range(things)], dtype=object)
    steps = np.arange(k + 1)  # step 0: the torque record, steps 1..k: speed records
    held = ScaledRecords(
        np.tile(names, k + 1),  # step by step, every thing at each step: time order
        np.repeat(np.where(steps == 0, RIGHT, LEFT).astype(object), things),
        np.repeat(START_MS + steps * STEP_MS, things).astype(np.int64),
        np.repeat(np.where(steps == 0, 3.5, 600.0 + steps), things).astype(np.float64),
    )
    release = ScaledRecords(
        names.copy(),
        np.full(things, RIGHT, dtype=object),
        np.full(things, START_MS + (k + 1) * STEP_MS, dtype=np.int64),
        np.full(things, 4.0),
    )
    return held, release


def released_pairs(held: ScaledRecords, release: ScaledRecords, specs: list[JoinSpec]) -> int:
    """How many pairs the spec makes certain when `release` arrives after `held`."""
    both = ScaledRecords(
        *(
            np.concatenate((getattr(held, f), getattr(release, f)))
            for f in ("things", "quantities", "t", "v")
        )
    )
    counts = [
        sum(len(s.step.pairs) for s in steps) for _, steps in joined_slices(both, specs, len(held))
    ]
    return counts[1] if len(counts) > 1 else 0


def burst(bench: BenchRun, pairs: int) -> dict:
    """Hold ~`pairs` pairs in a running join, release them at once, time until all are visible."""
    held, release = burst_records(pairs)
    expected = released_pairs(held, release, bench.specs(held))
    options = bench.join_options("burst")
    bench.say(
        f"burst: {len(held):,} records held by the join, then {len(release):,} records "
        f"that make {expected:,} pairs certain at once"
    )
    produce(bench.settings, bench.names["burst_in"], held, producer=bench.producer)
    query = start_join_query(bench.spark, bench.settings_of("burst"), options)
    watcher = PairWatcher(bench.settings, bench.names["burst_out"])
    watcher.start()
    try:
        wait_for_first_batch(query)
        if not wait_until(lambda: input_rows(query) >= len(held), WAIT_S, interval_s=0.05):
            raise RuntimeError("burst: timed out waiting for the held records to be read")
        time.sleep(1.0)  # their pairs (one per thing) committed and seen
        before = watcher.count
        sent = time.time()
        produce(bench.settings, bench.names["burst_in"], release, producer=bench.producer)
        watcher.wait_for(before + expected, WAIT_S)
    finally:
        watcher.stop()
        query.stop()
    seen = watcher.received()[before:]
    progress = query.recentProgress
    last_batch = query.lastProgress["batchId"] + 1 if query.lastProgress else 0
    last_seen = max((at for at, _ in seen), default=None)
    return {
        "burst_records": len(release),
        "burst_held_records": len(held),
        "burst_pairs_expected": expected,
        "burst_pairs": len(seen),
        "burst_seconds": round(last_seen - sent, 3) if last_seen else None,
        **_batch_times(release_batches(progress, sent, len(release)), sent, last_seen),
        "burst_driver_result_bytes": ResultSizes.of(bench.spark, query.id, last_batch),
    }


def release_batches(progress: list[dict], sent: float, records: int) -> list[dict]:
    """The batches that read the release's `records`, sent at `sent` (epoch s): those started
    since, until they have read that many (a trigger may have split them); [] if they did not.

    >>> progress = [{"timestamp": "1970-01-01T00:00:09.000Z", "numInputRows": 5},
    ...             {"timestamp": "1970-01-01T00:00:10.100Z", "numInputRows": 600},
    ...             {"timestamp": "1970-01-01T00:00:10.700Z", "numInputRows": 400}]
    >>> [b["numInputRows"] for b in release_batches(progress, 10.0, 1_000)]
    [600, 400]
    """
    batches, read = [], 0
    for batch in progress:
        if _started(batch) >= sent and batch["numInputRows"] and read < records:
            batches.append(batch)
            read += batch["numInputRows"]
    return batches if read == records else []


def _started(batch: dict) -> float:
    return datetime.fromisoformat(batch["timestamp"].replace("Z", "+00:00")).timestamp()


def _batch_times(batches: list[dict], sent: float, last_seen: float | None) -> dict:
    """The release's batches: from the first's start to the last's end, the wait from the send
    to that start, and from that end until the consumer had seen the last pair (reading 250,000
    records takes time too)."""
    if not batches:
        return {
            "burst_batches": 0,
            "burst_batch_ms": None,
            "burst_wait_ms": None,
            "burst_visible_after_ms": None,
        }
    start = _started(batches[0])
    end = _started(batches[-1]) + batches[-1]["durationMs"]["triggerExecution"] / 1000
    return {
        "burst_batches": len(batches),
        "burst_batch_ms": round((end - start) * 1000),
        "burst_wait_ms": round((start - sent) * 1000),
        "burst_visible_after_ms": None if last_seen is None else round((last_seen - end) * 1000),
    }
