"""The incremental complement-join engine of one thing and one join spec.

Feed it batches of either series in any interleaving; each call returns the pairs that became
certain (each exactly once over the life of the engine) and a verdict for every input record.

    >>> import numpy as np
    >>> join = ComplementJoin(JoinSpec("speed", "torque", "power", function="product"))
    >>> step = join.process(left=SeriesBatch.of([0, 2000], [1.0, 2.0]))
    >>> step = join.process(right=SeriesBatch.of([1000], [10.0]))
    >>> step.pairs.result.tolist()
    [10.0, 20.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from statestream.errors import StatestreamError
from statestream.join.emission import Frontier, newly_certain_pairs
from statestream.join.series import ACCEPTED, SeriesState
from statestream.join.spec import JoinSpec


@dataclass(frozen=True)
class SeriesBatch:
    """Records of one series in arrival order: times (ms), values, and positions (e.g. offsets).

    A time or value that is NaN marks a malformed record.
    """

    t: np.ndarray
    v: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(
        cls,
        t: Sequence[float] | np.ndarray,
        v: Sequence[float] | np.ndarray,
        pos: Sequence[int] | np.ndarray | None = None,
    ) -> SeriesBatch:
        t_arr = np.asarray(t, dtype=np.float64)
        v_arr = np.asarray(v, dtype=np.float64)
        if t_arr.shape != v_arr.shape:
            raise ValueError("times and values differ in length")
        pos_arr = np.arange(len(t_arr)) if pos is None else np.asarray(pos, dtype=np.int64)
        return cls(t_arr, v_arr, pos_arr.astype(np.int64, copy=False))

    @classmethod
    def empty(cls) -> SeriesBatch:
        return cls.of([], [])

    def __len__(self) -> int:
        return len(self.t)

    def slice(self, start: int, stop: int) -> SeriesBatch:
        return SeriesBatch(self.t[start:stop], self.v[start:stop], self.pos[start:stop])


@dataclass(frozen=True)
class JoinedPairs:
    """Emitted pairs as columns; `time` is the mean of the two records' times."""

    left_t: np.ndarray
    left_v: np.ndarray
    left_pos: np.ndarray
    right_t: np.ndarray
    right_v: np.ndarray
    right_pos: np.ndarray
    result: np.ndarray

    @property
    def time(self) -> np.ndarray:
        return (self.left_t + self.right_t) / 2.0

    def __len__(self) -> int:
        return len(self.result)

    @classmethod
    def concat(cls, parts: Sequence[JoinedPairs]) -> JoinedPairs:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in _PAIR_FIELDS))


_PAIR_FIELDS = ("left_t", "left_v", "left_pos", "right_t", "right_v", "right_pos", "result")

# A batch larger than this is joined in pieces: any split gives the same pairs (spec), and
# pieces that fit the CPU caches are faster than one huge piece.
MAX_PIECE = 1 << 16


@dataclass(frozen=True)
class SeriesVerdicts:
    """Per input record: ACCEPTED, MALFORMED, LATE or DUPLICATE, and the watermark it met."""

    codes: np.ndarray
    watermark: np.ndarray

    def count(self, code: int) -> int:
        return int(np.count_nonzero(self.codes == code))

    @classmethod
    def concat(cls, parts: Sequence[SeriesVerdicts]) -> SeriesVerdicts:
        return cls(
            np.concatenate([p.codes for p in parts]), np.concatenate([p.watermark for p in parts])
        )


@dataclass(frozen=True)
class JoinStep:
    """What one call of `ComplementJoin.process` produced."""

    pairs: JoinedPairs
    left: SeriesVerdicts
    right: SeriesVerdicts


class EngineFinished(StatestreamError):
    """Records were given to an engine after its input was declared finished."""


class ComplementJoin:
    """The complement join of one thing for one `JoinSpec`; its state is small enough to store."""

    def __init__(
        self, spec: JoinSpec, left: SeriesState | None = None, right: SeriesState | None = None
    ) -> None:
        self.spec = spec
        self.left = left if left is not None else SeriesState()
        self.right = right if right is not None else SeriesState()

    @property
    def finished(self) -> bool:
        return self.left.finished and self.right.finished

    @property
    def state_size(self) -> int:
        """Records held in state (both series, tail and pending)."""
        return self.left.size + self.right.size

    def process(
        self,
        left: SeriesBatch | None = None,
        right: SeriesBatch | None = None,
        finish: bool = False,
    ) -> JoinStep:
        """Ingest a batch of each series and return the pairs that became certain.

        With `finish`, the input is declared complete: pending records are released and every
        remaining pair of the join is emitted.
        """
        left = left if left is not None else SeriesBatch.empty()
        right = right if right is not None else SeriesBatch.empty()
        if self.finished and (len(left) or len(right)):
            raise EngineFinished("this join's input was declared finished; start a new engine")
        pieces = -(-(len(left) + len(right)) // MAX_PIECE)
        if pieces > 1:
            return self._process_in_pieces(left, right, finish, pieces)
        disorder = self.spec.disorder_ms
        before = (Frontier.of(self.left, disorder), Frontier.of(self.right, disorder))
        left_verdicts = self._ingest(self.left, "left", left)
        right_verdicts = self._ingest(self.right, "right", right)
        if finish:
            self.left.finished = self.right.finished = True
        self.left.release(disorder)
        self.right.release(disorder)
        now = (Frontier.of(self.left, disorder), Frontier.of(self.right, disorder))
        li, ri = newly_certain_pairs(self.left, self.right, before, now, self.spec.tolerance_ms)
        pairs = self._pairs(li, ri)
        self._prune()
        return JoinStep(pairs, left_verdicts, right_verdicts)

    def _process_in_pieces(
        self, left: SeriesBatch, right: SeriesBatch, finish: bool, pieces: int
    ) -> JoinStep:
        left_cuts = np.linspace(0, len(left), pieces + 1).astype(int)
        right_cuts = np.linspace(0, len(right), pieces + 1).astype(int)
        steps = [
            self.process(
                left.slice(left_cuts[k], left_cuts[k + 1]),
                right.slice(right_cuts[k], right_cuts[k + 1]),
                finish=finish and k == pieces - 1,
            )
            for k in range(pieces)
        ]
        return JoinStep(
            JoinedPairs.concat([s.pairs for s in steps]),
            SeriesVerdicts.concat([s.left for s in steps]),
            SeriesVerdicts.concat([s.right for s in steps]),
        )

    def finish(self) -> JoinStep:
        """Declare the input finished and emit the remaining pairs."""
        return self.process(finish=True)

    def _ingest(self, series: SeriesState, side: str, batch: SeriesBatch) -> SeriesVerdicts:
        if len(batch) == 0:
            return SeriesVerdicts(np.empty(0, np.int8), np.empty(0, np.float64))
        valid = np.isfinite(batch.t) & self.spec.accepts(side, batch.v)
        codes, watermark = series.classify(batch.t, valid, batch.v, self.spec.disorder_ms)
        ok = codes == ACCEPTED
        series.accept(batch.t[ok], batch.v[ok], batch.pos[ok])
        return SeriesVerdicts(codes, watermark)

    def _pairs(self, li: np.ndarray, ri: np.ndarray) -> JoinedPairs:
        lv, rv = self.left.v[li], self.right.v[ri]
        with np.errstate(all="ignore"):
            result = np.asarray(self.spec.result_function(lv, rv), dtype=np.float64)
        return JoinedPairs(
            self.left.t[li], lv, self.left.pos[li], self.right.t[ri], rv, self.right.pos[ri], result
        )

    def _prune(self) -> None:
        """Drop the records that can take part in no future pair (spec: bounded state)."""
        disorder = self.spec.disorder_ms
        wl, wr = self.left.watermark(disorder), self.right.watermark(disorder)
        unsettled_l = _first_unsettled_time(self.left, self.right, wr)
        unsettled_r = _first_unsettled_time(self.right, self.left, wl)
        # lookups into L come from R records still to be released (t ≥ W_R) and from unsettled R
        # records; L's own unsettled records stay, and so does all at or above W_L, the memory
        # the duplicate rule needs.
        self.left.prune(min(wr, unsettled_r, unsettled_l, wl))
        self.right.prune(min(wl, unsettled_l, unsettled_r, wr))


def _first_unsettled_time(series: SeriesState, other: SeriesState, other_wm: float) -> float:
    """Smallest time of a released record whose own relations into `other` are not certain."""
    if other.finished or len(series.t) == 0:
        return np.inf
    # next_other uncertain: no released record of `other` at or after it;
    # prev_other uncertain: other's watermark not past it.
    a = np.searchsorted(series.t, other.max_released_t, side="right")
    b = np.searchsorted(series.t, other_wm, side="left")
    first = int(min(a, b))
    return float(series.t[first]) if first < len(series.t) else np.inf
