"""The complement join of many things for one join spec, in one pass per series and call.

`ThingsJoin.process` does what `ComplementJoin.process` does for every thing of a batch at once:
the states of all things are columns (`table.SeriesTable`), and classification, release,
emission and pruning are segment-wise numpy operations over (thing, time), not a Python loop per
thing. Its output and every thing's state equal those of one `ComplementJoin` per thing fed the
same records (tests/join/test_things.py); a thing with more than `MAX_PIECE` records in one call
goes through its own `ComplementJoin`, which cuts such a batch into pieces.

    >>> spec = JoinSpec("speed", "torque", "power", function="product")
    >>> join = ThingsJoin(spec)
    >>> step = join.process(
    ...     Rows(np.array([0, 1]), np.array([0.0, 0.0]), np.array([2.0, 3.0]), np.arange(2)),
    ...     Rows(np.array([0, 1]), np.array([9.0, 9.0]), np.array([10.0, 10.0]), np.arange(2)),
    ... )
    >>> step.pair_thing.tolist(), step.pairs.result.tolist()
    ([0, 1], [20.0, 30.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from statestream.join.compiled import F8, I8, kernel
from statestream.join.engine import (
    MAX_PIECE,
    ComplementJoin,
    EngineFinished,
    JoinedPairs,
    SeriesBatch,
    SeriesVerdicts,
)
from statestream.join.keys import Groups, TimeKeys
from statestream.join.spec import JoinSpec
from statestream.join.table import Rows, SeriesTable
from statestream.join.things_emission import TailView, newly_certain_pairs
from statestream.join.things_series import ingest, prune, release

_I8 = np.int64
_F8 = np.float64


@dataclass(frozen=True)
class ThingsStep:
    """What one call of `ThingsJoin.process` produced.

    `pairs` are sorted by thing code (`pair_thing`), each thing's in its emission order; the
    verdicts are per input record, in input order.
    """

    pairs: JoinedPairs
    pair_thing: np.ndarray
    left: SeriesVerdicts
    right: SeriesVerdicts


class ThingsJoin:
    """The complement join of every thing for one `JoinSpec`; things are integer codes ≥ 0."""

    def __init__(self, spec: JoinSpec) -> None:
        self.spec = spec
        self.left = SeriesTable()
        self.right = SeriesTable()
        self.known = np.zeros(0, dtype=bool)  # things with a state here, by code
        self._local = np.zeros(0, dtype=_I8)

    @property
    def state_size(self) -> int:
        """Records held in state (all things, both series, tail and pending)."""
        return self.left.size + self.right.size

    def reserve(self, things: int) -> None:
        """Make room for thing codes below `things`."""
        if len(self.known) < things:
            size = max(things, 2 * len(self.known))
            self.known = np.concatenate((self.known, np.zeros(size - len(self.known), bool)))
            self._local = np.zeros(size, dtype=_I8)
        self.left.reserve(things)
        self.right.reserve(things)

    def engine(self, code: int) -> ComplementJoin:
        """A thing's state as a `ComplementJoin` of its own (a copy)."""
        return ComplementJoin(self.spec, self.left.state(code), self.right.state(code))

    def insert(self, codes: list[int], engines: list[ComplementJoin]) -> None:
        """Take in the states of things that have none here yet (restored ones, say)."""
        self.reserve(max(codes, default=-1) + 1)
        self.known[codes] = True
        self.left.insert(codes, [e.left for e in engines])
        self.right.insert(codes, [e.right for e in engines])

    def process(
        self,
        left: Rows,
        right: Rows,
        finish: bool = False,
        groups: tuple[Groups, Groups] | None = None,
    ) -> ThingsStep:
        """Ingest each series' records (arrival order) and return the pairs that became certain.

        With `finish`, the input of every thing is declared complete (`ComplementJoin.finish`).
        `groups` may pass `Groups.of` of each side's thing codes when the caller has them.
        """
        gl, gr = groups if groups is not None else (Groups.of(left.thing), Groups.of(right.thing))
        self.reserve(max((int(g.codes[-1]) + 1 for g in (gl, gr) if len(g.codes)), default=0))
        mark = np.zeros(len(self.known), dtype=bool)
        mark[gl.codes] = True
        mark[gr.codes] = True
        touched = np.flatnonzero(mark)
        if len(touched) and (self.left.finished[touched] & self.right.finished[touched]).any():
            raise EngineFinished("this join's input was declared finished; start a new engine")
        self.known[touched] = True
        if finish:
            touched = np.flatnonzero(self.known)
        out = _Output(len(left), len(right))
        if len(touched) == 0:
            return out.result(self.spec)
        counts = np.zeros(len(self.known), dtype=_I8)
        counts[gl.codes] += gl.sizes
        counts[gr.codes] += gr.sizes
        big = touched[counts[touched] > MAX_PIECE]
        if len(big):
            for code in big.tolist():
                self._process_one(code, left, right, finish, out)
            small_l = ~np.isin(left.thing, big)
            small_r = ~np.isin(right.thing, big)
            rows = (left.take(small_l), right.take(small_r))
            index = (np.flatnonzero(small_l), np.flatnonzero(small_r))
            touched = np.setdiff1d(touched, big)
            self._step(
                *rows,
                (Groups.of(rows[0].thing), Groups.of(rows[1].thing)),
                touched,
                finish,
                out,
                index,
            )
        else:
            self._step(left, right, (gl, gr), touched, finish, out, None)
        return out.result(self.spec)

    def _process_one(self, code: int, left: Rows, right: Rows, finish: bool, out: _Output):
        """One thing through its own `ComplementJoin` (a batch too large for one piece)."""
        engine = self.engine(code)
        li, ri = np.flatnonzero(left.thing == code), np.flatnonzero(right.thing == code)
        step = engine.process(
            SeriesBatch(left.t[li], left.v[li], left.pos[li]),
            SeriesBatch(right.t[ri], right.v[ri], right.pos[ri]),
            finish=finish,
        )
        mask = np.zeros(len(self.known), dtype=bool)
        mask[code] = True
        for table, state in ((self.left, engine.left), (self.right, engine.right)):
            table.remove(mask)
            table.insert([code], [state])
        out.add_pairs(step.pairs, np.full(len(step.pairs), code, dtype=_I8))
        out.add_verdicts(li, step.left, ri, step.right)

    def _step(self, left, right, groups, touched, finish, out, index) -> None:
        """All `touched` things at once; `index` maps the rows given to the caller's rows."""
        spec, disorder = self.spec, self.spec.disorder_ms
        mask = np.zeros(len(self.known), dtype=bool)
        mask[touched] = True
        rest = (self.left.split(mask), self.right.split(mask))
        self._local[touched] = np.arange(len(touched))
        times = [left.t, right.t]
        for table in (self.left, self.right):
            times += [table.tail.t, table.pending.t]
        keys = TimeKeys(times, len(touched), self._local)
        before = (self.left.watermark(touched, disorder), self.right.watermark(touched, disorder))
        verdicts = [
            ingest(table, side, rows, g, spec, keys)
            for table, side, rows, g in zip(
                (self.left, self.right), ("left", "right"), (left, right), groups, strict=True
            )
        ]
        everything = slice(None)
        out.add_verdicts(
            index[0] if index else everything,
            verdicts[0],
            index[1] if index else everything,
            verdicts[1],
        )
        if finish:
            self.left.finished[touched] = self.right.finished[touched] = True
        fresh = (release(self.left, disorder), release(self.right, disorder))
        now = (self.left.watermark(touched, disorder), self.right.watermark(touched, disorder))
        local = [self._local.take(table.tail.thing) for table in (self.left, self.right)]
        sides = [
            TailView.of(
                table.tail,
                mine,
                keys.stored_local(mine, table.tail.t),
                new,
                table.head_prev_t.take(touched),
                (wm_before, wm_now),
            )
            for table, mine, new, wm_before, wm_now in zip(
                (self.left, self.right), local, fresh, before, now, strict=True
            )
        ]
        li, ri = newly_certain_pairs(sides[0], sides[1], keys, spec.tolerance_ms)
        out.add_pairs(*_pairs(spec, self.left.tail, self.right.tail, li, ri))
        prune(self.left, self.right, (sides[0], sides[1]), touched, now)
        self.left.join(rest[0])
        self.right.join(rest[1])


class _Output:
    """The verdicts and pairs of one call, collected from the flat step and single things."""

    def __init__(self, n_left: int, n_right: int) -> None:
        self.codes = (np.empty(n_left, np.int8), np.empty(n_right, np.int8))
        self.watermark = (np.empty(n_left, _F8), np.empty(n_right, _F8))
        self.pairs: list[JoinedPairs] = []
        self.things: list[np.ndarray] = []

    def add_verdicts(self, li, left: SeriesVerdicts, ri, right: SeriesVerdicts) -> None:
        for k, (rows, verdicts) in enumerate(((li, left), (ri, right))):
            self.codes[k][rows] = verdicts.codes
            self.watermark[k][rows] = verdicts.watermark

    def add_pairs(self, pairs: JoinedPairs, things: np.ndarray) -> None:
        self.pairs.append(pairs)
        self.things.append(things)

    def result(self, spec: JoinSpec) -> ThingsStep:
        if not self.pairs:
            empty = np.empty(0, dtype=_I8)
            self.add_pairs(*_pairs(spec, Rows.empty(), Rows.empty(), empty, empty))
        if len(self.pairs) == 1:
            pairs, things = self.pairs[0], self.things[0]
        else:  # pieces of different things: put them in thing order, each thing's kept together
            pairs, things = JoinedPairs.concat(self.pairs), np.concatenate(self.things)
            order = np.argsort(things, kind="stable")
            pairs = JoinedPairs(*(getattr(pairs, f)[order] for f in _PAIR_FIELDS))
            things = things[order]
        return ThingsStep(
            pairs,
            things,
            SeriesVerdicts(self.codes[0], self.watermark[0]),
            SeriesVerdicts(self.codes[1], self.watermark[1]),
        )


_PAIR_FIELDS = ("left_t", "left_v", "left_pos", "right_t", "right_v", "right_pos", "result")


def _pairs(
    spec: JoinSpec, left: Rows, right: Rows, li: np.ndarray, ri: np.ndarray
) -> tuple[JoinedPairs, np.ndarray]:
    """The pairs of tail rows (li, ri), and their things."""
    thing, *columns = _gathered_pairs(*left.columns, *right.columns[1:], li, ri)
    left_t, left_v, left_pos, right_t, right_v, right_pos = columns
    with np.errstate(all="ignore"):
        result = np.asarray(spec.result_function(left_v, right_v), dtype=np.float64)
    return JoinedPairs(left_t, left_v, left_pos, right_t, right_v, right_pos, result), thing


@kernel(I8, F8, F8, I8, F8, F8, I8, I8, I8)
def _gathered_pairs(l_thing, l_t, l_v, l_pos, r_t, r_v, r_pos, li, ri):
    """The thing, then the left and right time, value and position of the pairs (li, ri) of
    tail rows: the seven columns in one pass (not a row's other columns)."""
    n = len(li)
    thing, left_pos, right_pos = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    left_t, left_v = np.empty(n, np.float64), np.empty(n, np.float64)
    right_t, right_v = np.empty(n, np.float64), np.empty(n, np.float64)
    for k in range(n):
        i, j = li[k], ri[k]
        thing[k], left_t[k], left_v[k], left_pos[k] = l_thing[i], l_t[i], l_v[i], l_pos[i]
        right_t[k], right_v[k], right_pos[k] = r_t[j], r_v[j], r_pos[j]
    return thing, left_t, left_v, left_pos, right_t, right_v, right_pos
