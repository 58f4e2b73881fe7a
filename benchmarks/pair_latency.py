"""How long a joined pair took to become visible, and from which record.

A pair is emitted when it becomes certain (spec: "at the first moment it is certain"), which is
often when the later of its two records arrives, but not always: `r = prev_R(l)` is certain only
once a later R record has arrived, and when a series pauses, pairs wait for it. That wait is the
join's meaning, not the pipeline's speed. So the bench measures a pair's latency from the send
time of the record that made it certain (`certain_at`, found by joining the input offline in the
producer's own slices) and reports the wait for data (certain minus the later of its two records)
beside it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import numpy as np

from benchmarks.pipeline_input import ScaledRecords, joined_slices
from statestream.join import JoinSpec

PairId = tuple[str, str, float, float]  # thing, left quantity, left time, right time


def certain_at(records: ScaledRecords, specs: list[JoinSpec], slice_size: int) -> dict[PairId, int]:
    """For each pair of `records`, the first record of the slice in which it becomes certain.

    The records are joined slice by slice, as the producer sends them (all records of a slice get
    one send time); the spec's determinism makes the pairs those of any other split.
    """
    found: dict[PairId, int] = {}
    for start, steps in joined_slices(records, specs, slice_size):
        for routed in steps:
            pairs = routed.step.pairs
            for left_t, right_t in zip(pairs.left_t.tolist(), pairs.right_t.tolist(), strict=True):
                found[(routed.thing, routed.spec.left, left_t, right_t)] = start
    return found


def largest_burst(certain: dict[PairId, int], window: int) -> int:
    """The most pairs made certain by the records of one `window` (records sent in a row).

    When a paused series resumes, every record held for it pairs at once: a burst the pipeline
    has to write in one batch, which shows in the latency's tail.
    """
    return _largest_window(certain, window)[1]


def burst_seconds(certain: dict[PairId, int], window: int, pairs: PairLatencies) -> float | None:
    """How long the largest burst took: the longest latency of its pairs (None if none seen).

    A pair's latency runs from the send time of the record that made it certain to the moment
    a read_committed consumer saw it, so this is the time until the whole burst was visible.
    """
    largest, count = _largest_window(certain, window)
    if not count:
        return None
    mine = pairs.starts // window == largest
    return float(pairs.latency[mine].max()) if mine.any() else None


def _largest_window(certain: dict[PairId, int], window: int) -> tuple[int, int]:
    """The window of `window` records in a row that made the most pairs certain, and how many."""
    per_window = Counter(start // window for start in certain.values())
    return max(per_window.items(), key=lambda item: item[1], default=(0, 0))


@dataclass(frozen=True)
class PairLatencies:
    """Per pair received: seconds from its certain record, and its wait for that record."""

    latency: np.ndarray  # visible − send time of the record that made it certain
    after_later_record: np.ndarray  # visible − send time of the later of its two records
    starts: np.ndarray  # the index of the record that made it certain

    @property
    def waited(self) -> np.ndarray:
        """Seconds between the later of a pair's records and the record that made it certain."""
        return self.after_later_record - self.latency


def pair_latencies(
    records: ScaledRecords,
    sent_at: np.ndarray,
    certain: dict[PairId, int],
    received: list[tuple[float, bytes]],
) -> PairLatencies:
    """The latencies of the pairs `received` ((visible time, pair JSON) each)."""
    sent = {
        (thing, quantity, t): s
        for thing, quantity, t, s in zip(
            records.things.tolist(),
            records.quantities.tolist(),
            records.t.tolist(),
            sent_at.tolist(),
            strict=True,
        )
    }
    latency, after_later, starts = [], [], []
    for seen, value in received:
        pair = json.loads(value)
        thing, left, right = pair["thing"], pair["left"], pair["right"]
        left_t, right_t = left["phenomenonTime"], right["phenomenonTime"]
        later = max(
            sent[(thing, left["quantity"], left_t)], sent[(thing, right["quantity"], right_t)]
        )
        start = certain[(thing, left["quantity"], float(left_t), float(right_t))]
        latency.append(seen - sent_at[start])
        after_later.append(seen - later)
        starts.append(start)
    return PairLatencies(np.array(latency), np.array(after_later), np.array(starts, dtype=np.int64))
