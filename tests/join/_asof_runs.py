"""Helpers of the as-of stream tests: two sides, a random run of pushes, and references."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from statestream.join.asof import AsofRule
from statestream.join.asof_stream import AsofOutput, AsofStream, Rows


@dataclass
class Side:
    """One side's rows in arrival order; row i has id i and order 3·i + 7 (gaps on purpose)."""

    key: np.ndarray
    t: np.ndarray

    @property
    def order(self) -> np.ndarray:
        return np.arange(len(self.t), dtype=np.int64) * 3 + 7

    def rows(self, ids: np.ndarray) -> Rows:
        ids = np.asarray(ids, dtype=np.int64)
        return Rows(self.key[ids], self.t[ids], self.order[ids], {"id": ids})

    def __len__(self) -> int:
        return len(self.t)


@dataclass
class Run:
    """What a run of pushes emitted: left id → right id (-1: no match), and the late ids."""

    matches: dict[int, int] = field(default_factory=dict)
    late_left: list[int] = field(default_factory=list)
    late_right: list[int] = field(default_factory=list)

    def take(self, out: AsofOutput) -> None:
        """Record one output; a left row emitted twice fails the test."""
        right_ids = out.right.columns.get("id", np.full(len(out.left), -1))
        for left_id, right_id, matched in zip(
            out.left.columns.get("id", []), right_ids, out.matched, strict=True
        ):
            assert int(left_id) not in self.matches, f"left row {left_id} emitted twice"
            self.matches[int(left_id)] = int(right_id) if matched else -1
        self.late_left += [int(i) for i in out.late_left.columns.get("id", [])]
        self.late_right += [int(i) for i in out.late_right.columns.get("id", [])]

    def as_array(self, n_left: int) -> np.ndarray:
        """Matches by left id; -2 for a left row not emitted."""
        return np.array([self.matches.get(i, -2) for i in range(n_left)], dtype=np.int64)


def run_stream(
    rule: AsofRule,
    disorder: float,
    left: Side,
    right: Side,
    rng: random.Random,
    *,
    flush: bool = True,
    restore: float = 0.0,
    most: int = 4,
) -> tuple[Run, AsofStream]:
    """Push both sides in a random interleaving and split (0..`most` rows of each side per push,
    shuffled within the push), through to_state/from_state with probability `restore` after each
    push; then flush if asked."""
    stream, run = AsofStream(rule, disorder), Run()
    next_left = next_right = 0
    while next_left < len(left) or next_right < len(right):
        take_left, take_right = rng.randint(0, most), rng.randint(0, most)
        left_ids = list(range(next_left, min(next_left + take_left, len(left))))
        right_ids = list(range(next_right, min(next_right + take_right, len(right))))
        next_left, next_right = next_left + len(left_ids), next_right + len(right_ids)
        rng.shuffle(left_ids)
        rng.shuffle(right_ids)
        run.take(stream.push(left.rows(left_ids), right.rows(right_ids)))
        if rng.random() < restore:
            stream = AsofStream.from_state(rule, disorder, stream.to_state())
    if flush:
        run.take(stream.flush())
    return run, stream


def late_reference(side: Side, disorder: float) -> list[int]:
    """Ids of the rows below their key's watermark (largest earlier t − disorder) on arrival."""
    largest: dict[object, float] = {}
    late = []
    for i, (key, t) in enumerate(zip(side.key.tolist(), side.t.tolist(), strict=True)):
        if key in largest and t < largest[key] - disorder:
            late.append(i)
        largest[key] = max(largest.get(key, t), t)
    return late


def not_late(key: np.ndarray, t: np.ndarray, disorder: float) -> np.ndarray:
    """The times raised where needed so that no row is late: t >= (largest earlier t of its key)
    − disorder."""
    t = t.copy()
    largest: dict[object, float] = {}
    for i, k in enumerate(key.tolist()):
        if k in largest:
            t[i] = max(t[i], largest[k] - disorder)
        largest[k] = max(largest.get(k, t[i]), t[i])
    return t
