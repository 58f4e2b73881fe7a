"""Helpers for testing joins: record builders, a driver, two independent references, and a reader
of a Kafka topic as a `read_committed` consumer sees it.

What the project's own tests use, a user can use to test their join specs:

    >>> from statestream.join import JoinSpec
    >>> spec = JoinSpec("L", "R", "out", function="product")
    >>> records = blocks_of_five(20)
    >>> len(run_join(spec, records, batch_size=3, finish=False))
    23
    >>> len(brute_force_join(spec, records, finish=True))
    27

A *record* here is `(side, time_ms, value)` with side "left" or "right"; list order is arrival
order. A *pair* is `(left_index, right_index)`: the positions of the two records in that list.

`join_observations` runs the offline join (`statestream join`, no services) on observations
`(thing, quantity, time_ms, value)` and returns the spec's output records:

    >>> rows = [("m1", "L", 0, 2.0), ("m1", "R", 1000, 3.0), ("m1", "L", 2000, 4.0)]
    >>> [(p["thing"], p["phenomenonTime"], p["result"]) for p in join_observations([spec], rows)]
    [('m1', 500, 6), ('m1', 1500, 12)]

`InMemoryMapState` stands in for a processor's MapState, to call a stateful processor's work
without Spark (`getValue` and `updateValue`, as the join's and the statistics' calls use them).

With PySpark, `statestream.testing.spark` builds observation DataFrames (batch and streaming)
from such lists and runs a stream into memory.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

import numpy as np

from statestream.exactly_once.read import read_committed as read_committed  # public helpers
from statestream.exactly_once.read import read_records as read_records
from statestream.join.engine import ComplementJoin, JoinStep, SeriesBatch
from statestream.join.series import ACCEPTED, DUPLICATE, LATE, MALFORMED
from statestream.join.spec import JoinSpec

Record = tuple[str, float, float]
Pair = tuple[int, int]


def alternating(n: int, step_ms: float = 1000.0) -> list[Record]:
    """L at 0, 2, 4 … and R at 1, 3, 5 … (times in steps), n records."""
    return [("left" if i % 2 == 0 else "right", i * step_ms, float(i)) for i in range(n)]


def blocks_of_five(n: int, step_ms: float = 1000.0) -> list[Record]:
    """L at 0–4, R at 5–9, L at 10–14 … (the spec's worked example), n records."""
    return [("left" if (i // 5) % 2 == 0 else "right", i * step_ms, float(i)) for i in range(n)]


def left_first(records: Sequence[Record]) -> list[Record]:
    """The same records, all of the left series first (each series keeps its own order)."""
    return [r for r in records if r[0] == "left"] + [r for r in records if r[0] == "right"]


def run_join(
    spec: JoinSpec,
    records: Sequence[Record],
    batch_size: int | Sequence[int] = 1_000_000,
    finish: bool = True,
    restore_every: int = 0,
) -> list[Pair]:
    """Run the engine over `records` in batches; return the emitted pairs in emission order.

    `batch_size` is a size or a list of cut sizes (cycled). With `restore_every` k > 0 the engine
    state is exported and restored into a new engine after every k-th batch.
    """
    from statestream.join.codec import export_state, restore_state

    engine = ComplementJoin(spec)
    sizes = [batch_size] if isinstance(batch_size, int) else list(batch_size)
    pairs: list[Pair] = []
    start, batch_no = 0, 0
    while start < len(records):
        end = start + max(1, sizes[batch_no % len(sizes)])
        pairs += _step_pairs(engine.process(*_batches(records, start, end)))
        start, batch_no = end, batch_no + 1
        if restore_every and batch_no % restore_every == 0:
            engine = restore_state(spec, export_state(engine))
    if finish:
        pairs += _step_pairs(engine.finish())
    return pairs


def _batches(records: Sequence[Record], start: int, end: int) -> tuple[SeriesBatch, SeriesBatch]:
    chunk = range(start, min(end, len(records)))
    sides = []
    for side in ("left", "right"):
        idx = [i for i in chunk if records[i][0] == side]
        sides.append(
            SeriesBatch.of([records[i][1] for i in idx], [records[i][2] for i in idx], idx)
        )
    return sides[0], sides[1]


def _step_pairs(step: JoinStep) -> list[Pair]:
    return list(zip(step.pairs.left_pos.tolist(), step.pairs.right_pos.tolist(), strict=True))


def classify(spec: JoinSpec, records: Sequence[Record]) -> dict[int, int]:
    """The spec's verdict for every record, one record at a time: index → code."""
    verdicts: dict[int, int] = {}
    for side in ("left", "right"):
        max_t = -math.inf
        seen: set[tuple[float, float]] = set()
        for i, (s, t, v) in enumerate(records):
            if s != side:
                continue
            if not _well_formed(spec, side, t, v):
                verdicts[i] = MALFORMED
            elif t < max_t - spec.disorder_ms:
                verdicts[i] = LATE
            elif (t, v) in seen:
                verdicts[i] = DUPLICATE
            else:
                verdicts[i] = ACCEPTED
                seen.add((t, v))
            if verdicts[i] != MALFORMED:
                max_t = max(max_t, t)
    return verdicts


def _well_formed(spec: JoinSpec, side: str, t: float, v: float) -> bool:
    return math.isfinite(t) and bool(spec.accepts(side, np.array([v], dtype=np.float64))[0])


def brute_force_join(spec: JoinSpec, records: Sequence[Record], finish: bool = True) -> set[Pair]:
    """The join by the spec's definition, evaluated record by record in plain Python.

    With `finish`, all of J(L, R) over the accepted records; without, the pairs certain at the end
    of the input (both records released, and a "prev" relation only once the other series'
    watermark is past the record).
    """
    verdicts = classify(spec, records)
    series: dict[str, list[tuple[float, int]]] = {}
    watermark: dict[str, float] = {}
    for side in ("left", "right"):
        accepted = [
            (records[i][1], i)
            for i in sorted(verdicts)
            if records[i][0] == side and verdicts[i] == ACCEPTED
        ]
        max_t = max((t for t, _ in accepted), default=-math.inf)
        watermark[side] = math.inf if finish else max_t - spec.disorder_ms
        series[side] = sorted(x for x in accepted if x[0] <= watermark[side])
    pairs: set[Pair] = set()
    for side, other in (("left", "right"), ("right", "left")):
        others = series[other]
        other_times = [t for t, _ in others]
        for t, i in series[side]:
            nxt = bisect.bisect_left(other_times, t)
            prv = bisect.bisect_right(other_times, t) - 1
            partners = []
            if nxt < len(others):
                partners.append(others[nxt][1])
            if prv >= 0 and watermark[other] > t:
                partners.append(others[prv][1])
            for j in partners:
                pair = (i, j) if side == "left" else (j, i)
                if abs(records[pair[0]][1] - records[pair[1]][1]) <= spec.tolerance_ms:
                    pairs.add(pair)
    return pairs


def join_observations(
    specs: Sequence[JoinSpec], rows: Iterable[tuple[str, str, float, float]], flush: bool = True
) -> list[dict]:
    """The offline join's pairs of `rows` (thing, quantity, epoch ms, value; list order is
    arrival order) as the spec's output records (dicts), in emission order."""
    import io

    import orjson

    from statestream.offline_join import join_lines

    lines = [
        orjson.dumps({"thing": th, "quantity": q, "phenomenonTime": t, "result": v})
        for th, q, t, v in rows
    ]
    out = io.StringIO()
    join_lines(lines, specs, out, io.StringIO, flush=flush)
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def count_verdicts(verdicts: Iterable[int]) -> dict[str, int]:
    """{"late": n, "duplicate": n, "malformed": n} of a verdict list."""
    values = list(verdicts)
    return {
        "late": values.count(LATE),
        "duplicate": values.count(DUPLICATE),
        "malformed": values.count(MALFORMED),
    }


class InMemoryMapState:
    """A transformWithState MapState in a dict: `getValue(key)` (None when absent) and
    `updateValue(key, value)`, keys and values as tuples of the state's columns."""

    def __init__(self) -> None:
        self.data: dict[tuple, tuple] = {}

    def getValue(self, key: tuple) -> tuple | None:
        return self.data.get(key)

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.data[key] = value
