"""Many things and many join specs at once: routes columns of records to the join of each spec.

>>> import numpy as np
>>> router = JoinRouter([JoinSpec("speed", "torque", "power", function="product")])
>>> steps = router.process(
...     things=np.array(["m1", "m2", "m1", "m2"], dtype=object),
...     quantities=np.array(["speed", "speed", "torque", "torque"], dtype=object),
...     t=np.array([0.0, 0.0, 1000.0, 1000.0]),
...     v=np.array([2.0, 3.0, 10.0, 10.0]),
... )
>>> sorted((s.thing, s.step.pairs.result.tolist()) for s in steps)
[('m1', [20.0]), ('m2', [30.0])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np

from statestream.join.engine import ComplementJoin, JoinedPairs, JoinStep, SeriesVerdicts
from statestream.join.keys import Groups, sided_rows
from statestream.join.names import CodedNames, NameCodes, Utf8Names
from statestream.join.spec import JoinSpec
from statestream.join.table import Rows
from statestream.join.things import ThingsJoin, ThingsStep

EngineKey = tuple[str, int]  # (thing, index of the spec)
_I8 = np.int64


@dataclass(frozen=True)
class RoutedStep:
    """One thing's step for one spec, with the input rows its left and right verdicts refer to."""

    thing: str
    spec: JoinSpec
    step: JoinStep
    left_rows: np.ndarray
    right_rows: np.ndarray


class JoinRouter:
    """The join of every (thing, spec): one `ThingsJoin` per spec holds the state of all things.

    A thing's engine for a spec is created on its first record of the spec's quantities, or
    loaded by `load_engine(thing, spec_index)` (a `ComplementJoin`, or None for a new one), or,
    all of a call's new things at once, by `load_states(things, spec_index)` (each one's
    `export_state` bytes, or None). A record whose quantity is in no spec takes part in no join;
    a quantity in several specs feeds each of them. `engines` gives every thing's state as a
    `ComplementJoin`, `exported_states` as its `export_state` bytes, e.g. to store it.
    """

    def __init__(
        self,
        specs: Sequence[JoinSpec],
        load_engine: Callable[[str, int], ComplementJoin | None] | None = None,
        load_states: Callable[[list[str], int], list[bytes | None]] | None = None,
    ) -> None:
        self.specs = list(specs)
        self._load_states = load_states
        self._spec_quantities = {q for spec in self.specs for q in (spec.left, spec.right)}
        self._load_engine = load_engine
        self._joins = [ThingsJoin(spec) for spec in self.specs]
        self._things = NameCodes()
        self._names = self._things.names
        self._quantities = NameCodes()
        # thing code and spec index of each engine, in creation order (ints: no tuple per
        # engine for the garbage collector to count)
        self._created: tuple[list[int], list[int]] = ([], [])

    @property
    def engines(self) -> dict[EngineKey, ComplementJoin]:
        """Each (thing, spec index)'s state as a `ComplementJoin`, in order of creation.

        Copies: for exporting (`export_state`); a change to one does not reach the router.
        """
        return {
            (self._names[c], i): self._joins[i].engine(c)
            for c, i in zip(*self._created, strict=True)
        }

    def exported_states(self) -> dict[EngineKey, bytes]:
        """`export_state` of each (thing, spec index)'s engine, in order of creation: the bytes
        of each spec's things written at once (`ThingsJoin.export_states`)."""
        by_spec: dict[int, list[int]] = {}
        for code, index in zip(*self._created, strict=True):
            by_spec.setdefault(index, []).append(code)
        states = {
            index: iter(self._joins[index].export_states(codes)) for index, codes in by_spec.items()
        }
        return {(self._names[c], i): next(states[i]) for c, i in zip(*self._created, strict=True)}

    def engine(self, thing: str, spec_index: int) -> ComplementJoin:
        """A copy of one thing's state for one spec (created, or loaded, if it has none yet)."""
        code = int(self._things([thing])[0])
        self._create(np.array([code], dtype=_I8), spec_index)
        return self._joins[spec_index].engine(code)

    def load(self, things: Sequence[str], spec_index: int) -> None:
        """Give each of `things` its engine for spec `spec_index` (loaded by `load_engine`, else
        new) without records, all at once: e.g. to `finish` stored engines."""
        self._create(self._things(list(things)), spec_index)

    @property
    def state_size(self) -> int:
        return sum(join.state_size for join in self._joins)

    def process(
        self,
        things: np.ndarray | CodedNames | Utf8Names,
        quantities: np.ndarray | CodedNames,
        t: np.ndarray,
        v: np.ndarray,
        pos: np.ndarray | None = None,
    ) -> RoutedSteps:
        """Join a batch of records given as columns, in arrival order.

        Things and quantities are names, or `CodedNames` (faster: each distinct name is looked
        up once); things also `Utf8Names` (fastest with many things: their bytes are coded by a
        compiled index). The steps come spec by spec, each spec's things in order of their first
        record.
        """
        t = np.asarray(t, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        pos = None if pos is None else np.asarray(pos, dtype=_I8)  # None: the row numbers
        if (
            isinstance(things, CodedNames | Utf8Names)
            and isinstance(quantities, CodedNames)
            and self._all_of_specs(things, quantities)
        ):
            return self._process_coded(things, quantities, t, v, pos)
        sides = self._sides(quantities)
        selected = self._selected(quantities, sides)
        if selected is None:
            codes = self._codes(things)
        else:
            codes = np.full(len(t), -1, dtype=_I8)
            if selected.any():
                at = np.flatnonzero(selected)
                coded = isinstance(things, (CodedNames, Utf8Names))
                some = things.take(at) if coded else np.asarray(things)[at]
                codes[at] = self._codes(some)
        parts = []
        for index, (is_left, is_right) in enumerate(sides):
            rows = (np.flatnonzero(is_left), np.flatnonzero(is_right))
            if len(rows[0]) or len(rows[1]):
                left, right = (
                    Rows(codes.take(r), t.take(r), v.take(r), r if pos is None else pos.take(r))
                    for r in rows
                )
                parts.append(self._process_spec(index, rows, left, right))
        return RoutedSteps(parts, self._names)

    def _all_of_specs(self, things: CodedNames | Utf8Names, quantities: CodedNames) -> bool:
        """Whether there are records and each quantity name is of a spec."""
        return len(things) > 0 and set(quantities.names) <= self._spec_quantities

    def _process_coded(
        self, things: CodedNames | Utf8Names, quantities: CodedNames, t, v, pos
    ) -> RoutedSteps:
        """`process` of coded columns whose records are all of a spec's quantity: each spec's
        sides split from the codes and grouped by thing in one compiled pass
        (`keys.sided_rows`)."""
        if isinstance(things, Utf8Names):  # the records' own codes are the router's
            record_codes = self._things.of_utf8(things)
            if len(self._things.names) <= 4 * len(record_codes) + 1024:
                thing_of_name = np.arange(len(self._things.names), dtype=_I8)
            else:  # far more things known than records: name only the batch's (sorted)
                thing_of_name, record_codes = np.unique(record_codes, return_inverse=True)
        else:
            record_codes, thing_of_name = things.codes, self._things.of_names(things)
        names = np.asarray(quantities.names, dtype=object)
        parts = []
        for index, (is_left, is_right) in enumerate(self._sides(names)):
            side_of_name = np.where(is_left, 0, np.where(is_right, 1, -1)).astype(np.int8)
            (left, left_groups), (right, right_groups) = sided_rows(
                record_codes, thing_of_name, quantities.codes, side_of_name, t, v, pos
            )
            if len(left[0]) or len(right[0]):
                rows, groups = (left[0], right[0]), (left_groups, right_groups)
                sides = Rows(*left[1:]), Rows(*right[1:])
                parts.append(self._process_spec(index, rows, *sides, groups))
        return RoutedSteps(parts, self._names)

    def _selected(self, quantities, sides) -> np.ndarray | None:
        """Which records are of a spec's quantity; None if all are (known from the names alone
        when they are coded and each is a spec's)."""
        if isinstance(quantities, CodedNames) and set(quantities.names) <= self._spec_quantities:
            return None
        selected = np.zeros(len(quantities), dtype=bool)
        for is_left, is_right in sides:
            selected |= is_left | is_right
        return None if selected.all() else selected

    def _codes(self, things: np.ndarray | CodedNames | Utf8Names) -> np.ndarray:
        if isinstance(things, Utf8Names):
            return self._things.of_utf8(things)
        if isinstance(things, CodedNames):
            return self._things.of(things)
        return self._things(np.asarray(things).tolist())

    def finish(self) -> RoutedSteps:
        """Declare every engine's input finished and return the remaining pairs."""
        empty = np.empty(0, dtype=_I8)
        parts = [
            _Part(
                index,
                join.spec,
                join.process(Rows.empty(), Rows.empty(), finish=True),
                (empty, empty),
                (Groups.of(empty), Groups.of(empty)),
            )
            for index, join in enumerate(self._joins)
        ]
        # the engines in order of creation, paired up when the steps are read
        created = (list(self._created[0]), list(self._created[1]))
        return RoutedSteps(parts, self._names, created)

    def _sides(self, quantities: np.ndarray | CodedNames) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per spec, which records are of its left and of its right quantity."""
        if isinstance(quantities, CodedNames):  # the sides of each name, then of each record
            records = np.asarray(quantities.codes)
            by_name = self._sides(np.asarray(quantities.names, dtype=object))
            return [(left.take(records), right.take(records)) for left, right in by_name]
        quantities = np.asarray(quantities)
        if len(self.specs) == 1:
            spec = self.specs[0]
            is_left = quantities == spec.left
            is_right = np.zeros(len(quantities), dtype=bool)
            rest = np.flatnonzero(~is_left)  # a quantity is compared with the right one only here
            is_right[rest] = quantities[rest] == spec.right
            return [(is_left, is_right)]
        # one pass over the column, however many specs
        ids = self._quantities(quantities.tolist())
        known = self._quantities([q for spec in self.specs for q in (spec.left, spec.right)])
        return [(ids == known[2 * k], ids == known[2 * k + 1]) for k in range(len(self.specs))]

    def _process_spec(
        self, index, rows, left: Rows, right: Rows, groups: tuple[Groups, Groups] | None = None
    ) -> _Part:
        """Spec `index`'s step of its records of each side (`rows`: their row numbers); `groups`:
        their `Groups.of` their things, if the caller has them."""
        if groups is None:
            groups = (Groups.of(left.thing), Groups.of(right.thing))
        join = self._joins[index]
        join.reserve(len(self._names))
        if any((~join.known.take(g.codes)).any() for g in groups):  # new things: by first row
            self._create(_in_order_of_first_row(groups, rows), index)
        step = join.process(left, right, groups=groups)
        return _Part(index, self.specs[index], step, rows, groups)

    def _create(self, things: np.ndarray, index: int) -> None:
        """Give the things without one an engine for spec `index`, loaded if there is a loader."""
        join = self._joins[index]
        join.reserve(len(self._names))
        new = things[~join.known[things]].tolist()
        if not new:
            return
        join.known[new] = True
        self._created[0].extend(new)
        self._created[1].extend([index] * len(new))
        if self._load_states is not None:
            states = self._load_states([self._names[c] for c in new], index)
            stored = [(c, s) for c, s in zip(new, states, strict=True) if s is not None]
            join.insert_states([c for c, _ in stored], [s for _, s in stored])
            return
        if self._load_engine is None:
            return
        engines = [(c, self._load_engine(self._names[c], index)) for c in new]
        loaded = [(c, e) for c, e in engines if e is not None]
        if loaded:
            join.insert([c for c, _ in loaded], [e for _, e in loaded])


def _in_order_of_first_row(groups: tuple[Groups, Groups], rows) -> np.ndarray:
    """The things of either side, in order of their first row."""
    size = max((int(g.codes[-1]) + 1 for g in groups if len(g.codes)), default=0)
    first = np.full(size, np.iinfo(_I8).max, dtype=_I8)
    for g, r in zip(groups, rows, strict=True):
        first[g.codes] = np.minimum(first[g.codes], r[g.order[g.starts]])
    things = np.flatnonzero(first < np.iinfo(_I8).max)
    return things[np.argsort(first[things], kind="stable")]


class _Part:
    """One spec's `ThingsStep`, and where each thing's pairs, verdicts and rows are in it."""

    def __init__(self, index, spec, step: ThingsStep, rows, groups) -> None:
        self.index, self.spec, self.step = index, spec, step
        self._rows, self.groups = rows, groups

    @cached_property
    def things(self) -> np.ndarray:
        """The things in step order: of their first row."""
        return _in_order_of_first_row(self.groups, self._rows)

    @cached_property
    def _grouped(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per side: rows, verdict codes and watermarks, by thing (arrival order within)."""
        verdicts = (self.step.left, self.step.right)
        return [
            (rows[g.order], v.codes[g.order], v.watermark[g.order])
            for rows, v, g in zip(self._rows, verdicts, self.groups, strict=True)
        ]

    def bounds(self, codes: np.ndarray) -> list[tuple[int, ...]]:
        """Per thing: where its pairs, left and right rows are (start, end each)."""
        thing = self.step.pair_thing
        columns = [np.searchsorted(thing, codes, "left"), np.searchsorted(thing, codes, "right")]
        for g in self.groups:
            if len(g.codes) == 0:  # no rows on this side
                columns += [np.zeros(len(codes), _I8)] * 2
                continue
            at = np.minimum(np.searchsorted(g.codes, codes), len(g.codes) - 1)
            found = g.codes[at] == codes
            start = np.where(found, g.starts[at], 0)
            columns += [start, start + np.where(found, g.sizes[at], 0)]
        return list(zip(*(c.tolist() for c in columns), strict=True))

    def routed(self, name: str, bounds: tuple[int, ...]) -> RoutedStep:
        a, b, ls, le, rs, re = bounds
        pairs = self.step.pairs
        (l_rows, l_codes, l_wm), (r_rows, r_codes, r_wm) = self._grouped
        step = JoinStep(
            JoinedPairs(
                pairs.left_t[a:b],
                pairs.left_v[a:b],
                pairs.left_pos[a:b],
                pairs.right_t[a:b],
                pairs.right_v[a:b],
                pairs.right_pos[a:b],
                pairs.result[a:b],
            ),
            SeriesVerdicts(l_codes[ls:le], l_wm[ls:le]),
            SeriesVerdicts(r_codes[rs:re], r_wm[rs:re]),
        )
        return RoutedStep(name, self.spec, step, l_rows[ls:le], r_rows[rs:re])


class RoutedSteps(Sequence[RoutedStep]):
    """The steps of one call, one per (thing, spec), each built when it is read.

    `pair_count` counts the pairs of all steps without building them.
    """

    def __init__(
        self,
        parts: list[_Part],
        names: list,
        created: tuple[list[int], list[int]] | None = None,
    ) -> None:
        self._parts = {part.index: part for part in parts}
        self._names = names
        self._created = created  # thing codes and spec indices, one step each, if given

    @cached_property
    def _order(self) -> list[tuple[int, int]]:
        """(spec index, thing code) per step: as given, or part by part in its things' order."""
        if self._created is not None:
            return [(index, code) for code, index in zip(*self._created, strict=True)]
        return [
            (part.index, code) for part in self._parts.values() for code in part.things.tolist()
        ]

    @property
    def pair_count(self) -> int:
        return sum(len(part.step.pairs) for part in self._parts.values())

    @property
    def names(self) -> list:
        """The things' names by code (the codes `pairs_by_spec(codes=True)` gives)."""
        return self._names

    def pairs_by_spec(
        self, codes: bool = False
    ) -> Iterator[tuple[JoinSpec, np.ndarray, JoinedPairs]]:
        """Per spec with pairs, those of all things at once: (spec, each pair's thing, pairs).

        A thing's pairs are together and in emission order, as its `RoutedStep` has them;
        for callers that handle every pair alike and need no step per thing. `codes`: each
        pair's thing as its code in `names`, not its name (no object array is built).
        """
        names = None if codes else np.asarray(self._names, dtype=object)
        for part in self._parts.values():
            if len(part.step.pairs):
                thing = part.step.pair_thing
                yield part.spec, thing if names is None else names[thing], part.step.pairs

    def verdicts_by_spec(self) -> Iterator[tuple[JoinSpec, str, np.ndarray, SeriesVerdicts]]:
        """Per spec and side ("left", "right"): the input rows and their verdicts, all things."""
        for part in self._parts.values():
            for side, (rows, codes, watermark) in zip(
                ("left", "right"), part._grouped, strict=True
            ):
                yield part.spec, side, rows, SeriesVerdicts(codes, watermark)

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, i: int) -> RoutedStep: ...
    @overload
    def __getitem__(self, i: slice) -> list[RoutedStep]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        index, code = self._order[i]
        part = self._parts[index]
        return part.routed(self._names[code], part.bounds(np.array([code]))[0])

    def __iter__(self) -> Iterator[RoutedStep]:
        wanted: dict[int, list[int]] = {index: [] for index in self._parts}
        for index, code in self._order:
            wanted[index].append(code)
        bounds = {
            index: iter(self._parts[index].bounds(np.array(codes, dtype=_I8)))
            for index, codes in wanted.items()
        }
        for index, code in self._order:
            yield self._parts[index].routed(self._names[code], next(bounds[index]))
