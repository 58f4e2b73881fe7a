"""`statestream bench join`: the engine against the per-record baseline, in one process.

Two inputs: the spec's blocks of five (one thing, L at 0–4, R at 5–9, …) and the real sample
data (actSpeed_C11 ⋈ vaTorque_C11) cloned into many things, each clone shifted in time and
jittered, arriving in time order across things. Figures are records/s and joins/s (pairs/s); the
ratio is the engine's joins/s over the baseline's on the same input.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.baseline_join import BaselineJoin
from statestream.join import ComplementJoin, JoinRouter, JoinSpec, SeriesBatch
from statestream.spark._bucket_join import arrow_coded_names, arrow_utf8_names

SAMPLE = Path(__file__).resolve().parents[1] / "src/statestream/data/machine_events.jsonl"
SAMPLE_SPEC = JoinSpec("actSpeed_C11", "vaTorque_C11", "vaPower_C11", function="power")
BLOCKS_SPEC = JoinSpec("L", "R", "out", function="product")
BATCH = 100_000

Progress = Callable[[str], None]


@dataclass
class Figures:
    """One implementation on one input."""

    records: int
    pairs: int
    seconds: float
    peak_state: int = 0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def joins_per_s(self) -> float:
        return self.pairs / self.seconds


@dataclass(frozen=True)
class Columns:
    """Records in arrival order."""

    things: np.ndarray
    is_left: np.ndarray
    t: np.ndarray
    v: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def head(self, n: int) -> Columns:
        """The first n records."""
        return Columns(self.things[:n], self.is_left[:n], self.t[:n], self.v[:n])


def blocks_of_five(n: int) -> Columns:
    i = np.arange(n)
    return Columns(np.full(n, "m", dtype=object), (i // 5) % 2 == 0, i * 1000.0, i * 1.0)


def _sample_rows() -> list[tuple[str, bool, float, float]]:
    """The sample's speed and torque records as (thing, is_left, time, value), in time order."""
    rows: list[tuple[str, bool, float, float]] = []
    for line in SAMPLE.read_text().splitlines():
        row = json.loads(line)
        for quantity, is_left in ((SAMPLE_SPEC.left, True), (SAMPLE_SPEC.right, False)):
            if isinstance(row.get(quantity), int | float):
                rows.append((row["Thing"], is_left, float(row["Timestamp"]), row[quantity]))
    rows.sort(key=lambda r: r[2])
    return rows


def scaled_sample(n: int, seed: int = 1) -> Columns:
    """The sample's speed and torque records cloned into as many things as `n` records need."""
    base = _sample_rows()
    rng = np.random.default_rng(seed)
    copies = -(-n // len(base))
    things = np.array([f"{b[0]}-{k}" for k in range(copies) for b in base], dtype=object)
    is_left = np.tile(np.array([b[1] for b in base]), copies)
    t0 = np.array([b[2] for b in base])
    shift = rng.integers(0, 60_000, size=copies).astype(np.float64)
    jitter = rng.integers(-20, 21, size=copies * len(base)).astype(np.float64)
    t = (t0[None, :] + shift[:, None]).ravel() + jitter
    v = np.tile(np.array([b[3] for b in base]), copies)
    order = np.argsort(t, kind="stable")[:n]  # arrival in time order across things
    return Columns(things[order], is_left[order], t[order], v[order])


def spread_sample(n: int, things: int, seed: int = 1) -> Columns:
    """The sample's records spread over `things` things, about n / things records each.

    Each machine's series (speed and torque in time order, repeated end to end where a thing
    needs more records than it has) is cut into windows of n / things records; thing k takes
    window k (cycling through them), starts at a random time in the first minute and is
    jittered by ±20 ms. Records arrive in time order across things, so a batch holds records of
    many things.
    """
    base = _sample_rows()
    per_thing = -(-n // things)
    counts = Counter(b[0] for b in base)
    machines = sorted(counts, key=lambda name: (-counts[name], name))  # the largest first
    windows = [
        (m, start) for m, name in enumerate(machines) for start in range(0, counts[name], per_thing)
    ]
    rng = np.random.default_rng(seed)
    shift = rng.integers(0, 60_000, size=things).astype(np.float64)
    window = np.arange(things) % len(windows)
    parts = []
    for m, name in enumerate(machines):
        rows = [b for b in base if b[0] == name]
        t0 = np.array([b[2] for b in rows])
        period = t0[-1] - t0[0] + 1000.0  # a repetition starts a second after the last record
        mine = np.flatnonzero(np.array([windows[w][0] == m for w in window]))
        start = np.array([windows[w][1] for w in window[mine]], dtype=np.int64)
        lap, at = np.divmod(start[:, None] + np.arange(per_thing)[None, :], len(rows))
        t = t0[at] + lap * period - t0[start][:, None] + shift[mine][:, None]
        names = np.array([f"{name}-{k}" for k in mine], dtype=object)
        parts.append(
            (
                np.repeat(names, per_thing),
                np.array([b[1] for b in rows])[at].ravel(),
                t.ravel(),
                np.array([b[3] for b in rows])[at].ravel(),
            )
        )
    thing, is_left, t, v = (np.concatenate(column) for column in zip(*parts, strict=True))
    t = t + rng.integers(-20, 21, size=len(t)).astype(np.float64)
    order = np.argsort(t, kind="stable")[:n]  # arrival in time order across things
    return Columns(thing[order], is_left[order], t[order], v[order])


def engine_single(columns: Columns, spec: JoinSpec, batch: int = BATCH) -> Figures:
    engine, pairs, peak = ComplementJoin(spec), 0, 0
    started = time.perf_counter()
    for start in range(0, len(columns), batch):
        part = slice(start, start + batch)
        left = columns.is_left[part]
        t, v = columns.t[part], columns.v[part]
        pos = np.arange(start, start + len(t))
        step = engine.process(
            SeriesBatch(t[left], v[left], pos[left]), SeriesBatch(t[~left], v[~left], pos[~left])
        )
        pairs += len(step.pairs)
        peak = max(peak, engine.state_size)
    pairs += len(engine.finish().pairs)
    return Figures(len(columns), pairs, time.perf_counter() - started, peak)


def engine_many(columns: Columns, spec: JoinSpec, batch: int = BATCH) -> Figures:
    """The router on batches of Arrow string columns, as Spark's Arrow batches bring them: the
    timed region includes coding things (their bytes, `arrow_utf8_names`) and quantities
    (`arrow_coded_names`)."""
    router, pairs, peak = JoinRouter([spec]), 0, 0
    quantities = np.where(columns.is_left, spec.left, spec.right).astype(object)
    batches = [
        (pa.array(columns.things[part], pa.string()), pa.array(quantities[part], pa.string()))
        for part in (slice(start, start + batch) for start in range(0, len(columns), batch))
    ]
    started = time.perf_counter()
    for k, (things, names) in enumerate(batches):
        part = slice(k * batch, (k + 1) * batch)
        steps = router.process(
            arrow_utf8_names(things), arrow_coded_names(names), columns.t[part], columns.v[part]
        )
        pairs += steps.pair_count  # the per-thing steps are built only when read
        peak = max(peak, router.state_size)
    pairs += router.finish().pair_count
    return Figures(len(columns), pairs, time.perf_counter() - started, peak)


def baseline(columns: Columns, spec: JoinSpec) -> Figures:
    joins: dict[str, BaselineJoin] = {}
    pairs = 0
    things = columns.things.tolist()
    sides = np.where(columns.is_left, "left", "right").tolist()
    times, values = columns.t.tolist(), columns.v.tolist()
    started = time.perf_counter()
    for i, thing in enumerate(things):
        join = joins.get(thing)
        if join is None:
            join = joins[thing] = BaselineJoin(spec.disorder_ms, spec.tolerance_ms)
        pairs += len(join.add(sides[i], times[i], values[i], i))
    pairs += sum(len(join.finish()) for join in joins.values())
    return Figures(len(columns), pairs, time.perf_counter() - started)


def run(records: int, baseline_records: int, progress: Progress | None = None) -> dict:
    """Both inputs, engine and baseline; the figures as one JSON-ready dict."""
    say = progress or (lambda _: None)
    engine_single(blocks_of_five(10_000), BLOCKS_SPEC)  # warm-up
    say(f"engine: {records:,} records in blocks of five")
    blocks = engine_single(blocks_of_five(records), BLOCKS_SPEC)
    say(f"baseline: {baseline_records:,} records in blocks of five")
    blocks_base = baseline(blocks_of_five(baseline_records), BLOCKS_SPEC)
    say(f"engine: real sample scaled to {records:,} records")
    sample_columns = scaled_sample(records)
    sample = engine_many(sample_columns, SAMPLE_SPEC)
    say(f"baseline: real sample scaled to {baseline_records:,} records")
    sample_base = baseline(scaled_sample(baseline_records), SAMPLE_SPEC)
    return {
        "records": blocks.records,
        "pairs": blocks.pairs,
        "seconds": round(blocks.seconds, 4),
        "records_per_s": round(blocks.records_per_s),
        "joins_per_s": round(blocks.joins_per_s),
        "peak_state": blocks.peak_state,
        "baseline_records": blocks_base.records,
        "baseline_joins_per_s": round(blocks_base.joins_per_s),
        "ratio": round(blocks.joins_per_s / blocks_base.joins_per_s, 1),
        "sample": {
            "things": len(set(sample_columns.things.tolist())),
            **_against_baseline(sample, sample_base),
        },
    }


def run_things(
    records: int, baseline_records: int, things: int, progress: Progress | None = None
) -> dict:
    """The real sample spread over `things` things, engine and baseline (on its first records)."""
    say = progress or (lambda _: None)
    engine_many(spread_sample(10_000, min(things, 1_000)), SAMPLE_SPEC)  # warm-up
    columns = spread_sample(records, things)
    say(f"engine: real sample, {records:,} records over {things:,} things")
    figures = engine_many(columns, SAMPLE_SPEC)
    say(f"baseline: the first {baseline_records:,} of those records")
    base = baseline(columns.head(baseline_records), SAMPLE_SPEC)
    return {
        "input": "sample",
        "things": len(set(columns.things.tolist())),
        **_against_baseline(figures, base),
    }


def _against_baseline(figures: Figures, base: Figures) -> dict:
    """The engine's figures, rates rounded, with the baseline's joins/s and the ratio."""
    return {
        **_rounded(asdict(figures)),
        "records_per_s": round(figures.records_per_s),
        "joins_per_s": round(figures.joins_per_s),
        "baseline_records": base.records,
        "baseline_joins_per_s": round(base.joins_per_s),
        "ratio": round(figures.joins_per_s / base.joins_per_s, 1),
    }


def _rounded(figures: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
