"""The complement join of many things for one join spec, in one compiled pass per call.

`ThingsJoin.process` does what `ComplementJoin.process` does for every thing of a batch at once:
the states of all things are columns (`table.SeriesTable`), and one compiled pass over the
things (`things_pass.stepped`) classifies, releases, emits and prunes, not a Python loop per
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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from statestream.join import table_codec
from statestream.join.codec import restore_state
from statestream.join.engine import (
    MAX_PIECE,
    ComplementJoin,
    EngineFinished,
    JoinedPairs,
    SeriesBatch,
    SeriesVerdicts,
)
from statestream.join.keys import Groups
from statestream.join.spec import JoinSpec
from statestream.join.table import Rows, SeriesTable
from statestream.join.things_pass import stepped

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
        self._buffers = _Buffers()

    @property
    def state_size(self) -> int:
        """Records held in state (all things, both series, tail and pending)."""
        return self.left.size + self.right.size

    def reserve(self, things: int) -> None:
        """Make room for thing codes below `things`."""
        if len(self.known) < things:
            size = max(things, 2 * len(self.known))
            self.known = np.concatenate((self.known, np.zeros(size - len(self.known), bool)))
        self.left.reserve(things)
        self.right.reserve(things)

    def engine(self, code: int) -> ComplementJoin:
        """A thing's state as a `ComplementJoin` of its own (a copy)."""
        return ComplementJoin(self.spec, self.left.state(code), self.right.state(code))

    def export_states(self, codes: Sequence[int]) -> list[bytes]:
        """`export_state(self.engine(code))` of each of `codes`, written at once."""
        return table_codec.exported(self.left, self.right, np.asarray(codes, dtype=np.int64))

    def insert_states(self, codes: Sequence[int], states: Sequence[bytes]) -> None:
        """Take in the `export_state` bytes of things that have none here yet, read at once;
        bytes not in the layout raise `StateFormatError` as `restore_state` does."""
        if not len(codes):
            return
        by_code = np.argsort(codes, kind="stable")
        index = np.asarray(codes, dtype=np.int64)[by_code]
        ordered = [states[k] for k in by_code]
        columns = table_codec.restored(index, ordered)
        if columns is None:
            self.insert(index.tolist(), [restore_state(self.spec, s) for s in ordered])
            return
        self.reserve(int(index[-1]) + 1)
        self.known[index] = True
        self.left.insert_columns(index, columns[0])
        self.right.insert_columns(index, columns[1])

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
        spec, tables = self.spec, (self.left, self.right)
        sides = [
            _side(table, rows, g, spec.accepts(side, rows.v))
            for table, side, rows, g in zip(
                tables, ("left", "right"), (left, right), groups, strict=True
            )
        ]
        buffers = self._buffers.for_step(tables, (left, right))
        *series, pairs = stepped(
            touched, finish, spec.disorder_ms, spec.tolerance_ms, *sides, buffers
        )
        for table, (tail, pending), (_, _, tail_size, pending_size) in zip(
            tables, buffers[4:6], series, strict=True
        ):
            table.tail = Rows(*(c[:tail_size] for c in tail))
            table.pending = Rows(*(c[:pending_size] for c in pending))
        everything = slice(None)
        out.add_verdicts(
            index[0] if index else everything,
            SeriesVerdicts(*series[0][:2]),
            index[1] if index else everything,
            SeriesVerdicts(*series[1][:2]),
        )
        thing, *columns = pairs
        out.add_pairs(_joined(spec, *columns), thing)


def _side(table: SeriesTable, rows: Rows, groups: Groups, accepted: np.ndarray) -> tuple:
    """One series as `things_pass.stepped` takes it: its records (arrival order) with their
    groups and validity (`accepted`: values the result function takes), its state."""
    return (
        (groups.order, groups.codes, groups.starts, groups.sizes),
        (rows.t, rows.v, rows.pos, np.isfinite(rows.t) & accepted),
        table.tail.columns,
        table.pending.columns,
        (table.head_prev_t, table.n_released, table.max_t, table.finished),
    )


class _Buffers:
    """The arrays `things_pass.stepped` writes into, kept from step to step: so that a step
    does not take fresh memory from the system (a page fault per 4 kB touched) for its state
    and scratch. Each series' state alternates between two sets of columns (the step reads one
    and writes the other); the rest grows as needed and is only touched as far as used."""

    def __init__(self) -> None:
        empty = (_rows(0), _rows(0))  # tail and pending columns
        self._states = [[empty, empty], [empty, empty]]  # per series, two sets
        self._spare = [0, 0]
        self._pairs: tuple[np.ndarray, ...] = tuple(np.empty(0, _I8) for _ in range(4))
        self._sorting = [_scratch(0), _scratch(0)]
        self._batches = [_batch(0), _batch(0)]

    def for_step(self, tables, batches) -> tuple:
        """The buffers for a step of these tables with these batches (`things_pass.BUFFERS`),
        grown where too small; each series' new state goes to the set its table does not use."""
        rows = [len(t.tail) + len(t.pending) + len(b) for t, b in zip(tables, batches, strict=True)]
        states = []
        for side, (table, batch) in enumerate(zip(tables, batches, strict=True)):
            spare = self._spare[side]
            tail, pending = self._states[side][spare]
            if len(tail[0]) < rows[side] or len(pending[0]) < len(table.pending) + len(batch):
                self._states[side][spare] = tail, pending = (
                    _rows(_grown(rows[side])),
                    _rows(_grown(len(table.pending) + len(batch))),
                )
            self._spare[side] = 1 - spare
            states.append((tail, pending))
            if len(self._sorting[side][0]) < rows[side]:
                self._sorting[side] = _scratch(_grown(rows[side]))
            if len(self._batches[side][0]) < len(batch):
                self._batches[side] = _batch(_grown(len(batch)))
        bound = 2 * sum(rows)  # a thing has at most two pairs per tail record
        if len(self._pairs[0]) < bound:
            self._pairs = tuple(np.empty(_grown(bound), _I8) for _ in range(4))
        return (*self._pairs, *states, *self._sorting, *self._batches)


def _grown(size: int) -> int:
    return max(1024, size + size // 2)


def _rows(size: int) -> tuple[np.ndarray, ...]:
    return np.empty(size, _I8), np.empty(size, _F8), np.empty(size, _F8), np.empty(size, _I8)


def _batch(size: int) -> tuple[np.ndarray, ...]:
    """Room for a series' records in thing order: t, v, pos, validity, verdict, watermark."""
    return (
        np.empty(size, _F8), np.empty(size, _F8), np.empty(size, _I8), np.empty(size, bool),
        np.empty(size, np.int8), np.empty(size, _F8),
    )  # fmt: skip


def _scratch(size: int) -> tuple[np.ndarray, ...]:
    return (
        np.empty(size, _F8), np.empty(size, _F8), np.empty(size, _I8), np.empty(size, _I8),
        np.empty(size, _I8),
    )  # fmt: skip


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
            i8, f8 = np.empty(0, dtype=_I8), np.empty(0, dtype=_F8)
            self.add_pairs(_joined(spec, f8, f8, i8, f8, f8, i8), i8)
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


def _joined(spec: JoinSpec, left_t, left_v, left_pos, right_t, right_v, right_pos) -> JoinedPairs:
    """The pairs of these columns, with the spec's result."""
    with np.errstate(all="ignore"):
        result = np.asarray(spec.result_function(left_v, right_v), dtype=np.float64)
    return JoinedPairs(left_t, left_v, left_pos, right_t, right_v, right_pos, result)
