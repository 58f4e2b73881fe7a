"""The join of many things at once equals one `ComplementJoin` per thing, step by step.

`JoinRouter` (one `ThingsJoin` per spec) against the router as it was (`_reference.py`): the same
steps in the same order, with the same rows, verdicts, watermarks and pairs (every column, in
emission order), the same state per (thing, spec) byte for byte after every batch, for random
things, specs, ties, disorder, tolerance, duplicates, late and malformed records, batch splits,
and state exported and restored between batches as the Spark job does. (A thing with more than
`MAX_PIECE` records in one call is held to the spec's definition: tests/join/test_pieces.py.)
"""

from __future__ import annotations

import doctest
import importlib
import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join import (
    JoinRouter,
    JoinSpec,
    RoutedStep,
    export_state,
    restore_state,
)
from statestream.testing import blocks_of_five
from tests.join._reference import PerThingRouter

THINGS = ["m0", "m1", "m2", "m3", "m4"]
QUANTITIES = ["speed", "torque", "current", "noise"]  # torque feeds two specs, noise none
PAIR_FIELDS = ("left_t", "left_v", "left_pos", "right_t", "right_v", "right_pos", "result")


@st.composite
def cases(draw: st.DrawFn):
    """Specs, records (thing, quantity, t, v) in arrival order, batch sizes and options."""
    disorder = draw(st.sampled_from([0.0, 0.0, 2.0, 5.0]))
    tolerance = draw(st.sampled_from([None, None, 1.0, 4.0]))
    specs = [
        JoinSpec(
            "speed",
            "torque",
            "power",
            function=draw(st.sampled_from(["product", "ratio"])),
            disorder=disorder,
            tolerance=tolerance,
        )
    ]
    if draw(st.booleans()):
        specs.append(JoinSpec("torque", "current", "slip", function="difference", disorder=1.0))
    base = draw(st.sampled_from([0.0, 0.0, 1.554e12, -7000.0]))
    fraction = draw(st.sampled_from([0.0, 0.0, 0.25]))  # whole milliseconds or not
    specials = [math.nan, math.inf, -math.inf, -0.0]

    def time(step: int) -> float:
        return base + step * 1000.0 + fraction if step < 26 else specials[step - 26]

    size = draw(st.integers(0, 100))
    records = draw(
        st.lists(
            st.tuples(
                st.sampled_from(THINGS[: draw(st.sampled_from([1, 2, 3, 5]))]),
                st.sampled_from(QUANTITIES[:2] * 3 + QUANTITIES[2:]),
                st.integers(0, 29).map(time),
                st.sampled_from([0.0, 1.0, 2.5, -3.0, math.nan]),
            ),
            min_size=size,
            max_size=size,
        )
    )
    splits = draw(st.lists(st.integers(1, 25), min_size=1, max_size=6))
    return specs, records, splits


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _columns(records, start: int, end: int):
    chunk = records[start:end]
    return (
        np.array([r[0] for r in chunk], dtype=object),
        np.array([r[1] for r in chunk], dtype=object),
        np.array([r[2] for r in chunk], dtype=np.float64),
        np.array([r[3] for r in chunk], dtype=np.float64),
        np.arange(start, start + len(chunk), dtype=np.int64),
    )


def assert_same_steps(got: Sequence[RoutedStep], expected: Sequence[RoutedStep]) -> None:
    assert [(s.thing, s.spec) for s in got] == [(s.thing, s.spec) for s in expected]
    for g, e in zip(got, expected, strict=True):
        for a, b in (
            (g.left_rows, e.left_rows),
            (g.right_rows, e.right_rows),
            (g.step.left.codes, e.step.left.codes),
            (g.step.left.watermark, e.step.left.watermark),
            (g.step.right.codes, e.step.right.codes),
            (g.step.right.watermark, e.step.right.watermark),
            *((getattr(g.step.pairs, f), getattr(e.step.pairs, f)) for f in PAIR_FIELDS),
        ):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def assert_by_spec_as_steps(steps) -> None:
    """`pairs_by_spec` and `verdicts_by_spec` hold what the steps hold, all things at once."""
    for spec, things, pairs in steps.pairs_by_spec():
        mine = {s.thing: s.step.pairs for s in steps if s.spec == spec and len(s.step.pairs)}
        runs = [t for k, t in enumerate(things.tolist()) if k == 0 or things[k - 1] != t]
        assert sorted(runs) == sorted(mine)  # each thing's pairs in one run
        for thing, expected in mine.items():
            at = things == thing
            for f in PAIR_FIELDS:
                np.testing.assert_array_equal(getattr(pairs, f)[at], getattr(expected, f))
    assert {spec for spec, _, _ in steps.pairs_by_spec()} == {
        s.spec for s in steps if len(s.step.pairs)
    }
    for spec, side, rows, verdicts in steps.verdicts_by_spec():
        mine = [s for s in steps if s.spec == spec]
        by_row = {
            int(row): (int(code), float(wm))
            for s in mine
            for row, code, wm in zip(
                getattr(s, f"{side}_rows"),
                getattr(s.step, side).codes,
                getattr(s.step, side).watermark,
                strict=True,
            )
        }
        got = {
            int(row): (int(code), float(wm))
            for row, code, wm in zip(rows, verdicts.codes, verdicts.watermark, strict=True)
        }
        assert got.keys() == by_row.keys()
        for row, (code, wm) in got.items():
            assert code == by_row[row][0]
            assert wm == by_row[row][1] or (math.isnan(wm) and math.isnan(by_row[row][1]))


def _exported(router) -> list[tuple[tuple[str, int], bytes]]:
    return [(key, export_state(engine)) for key, engine in router.engines.items()]


class _Pair:
    """The router under test and the reference, fed alike; with `restore`, both are rebuilt
    before every batch from the states they exported after the previous one (the Spark job).
    With `bulk`, the router under test exports and loads its states as bytes, all at once
    (`exported_states`, `load_states`), as the pipeline's processor does."""

    def __init__(self, specs: list[JoinSpec], restore: bool, bulk: bool = False) -> None:
        self.specs, self.restore, self.bulk = specs, restore, bulk
        self.stored: list[dict] = [{}, {}]
        self.routers = self._routers()

    def _routers(self):
        def loader(store):
            def load(thing, index):
                data = store.get((thing, index))
                return restore_state(self.specs[index], data) if data is not None else None

            return load

        def states_loader(store):
            return lambda things, index: [store.get((thing, index)) for thing in things]

        if self.bulk:
            router = JoinRouter(self.specs, load_states=states_loader(self.stored[0]))
        else:
            router = JoinRouter(self.specs, load_engine=loader(self.stored[0]))
        return router, PerThingRouter(self.specs, load_engine=loader(self.stored[1]))

    def step(self, columns) -> None:
        if self.restore:
            self.routers = self._routers()
        new, old = self.routers
        steps = new.process(*columns)
        assert_same_steps(steps, old.process(*columns))
        assert_by_spec_as_steps(steps)
        self.check_state()
        self.stored[0].update(new.exported_states() if self.bulk else _exported(new))
        self.stored[1].update(_exported(old))

    def finish(self) -> None:
        new, old = self.routers
        assert_same_steps(new.finish(), old.finish())
        self.check_state()

    def check_state(self) -> None:
        new, old = self.routers
        assert _exported(new) == _exported(old)
        assert list(new.exported_states().items()) == _exported(old)
        assert new.state_size == old.state_size


def _run(specs, records, splits, restore: bool, finish: bool, bulk: bool = False) -> None:
    pair = _Pair(specs, restore, bulk)
    start, k = 0, 0
    while start < len(records):
        end = start + splits[k % len(splits)]
        pair.step(_columns(records, start, end))
        start, k = end, k + 1
    if finish and not restore:
        pair.finish()


@PROPERTY
@given(cases(), st.booleans(), st.booleans(), st.booleans())
def test_many_things_equal_one_engine_per_thing(
    case, restore: bool, finish: bool, bulk: bool
) -> None:
    _run(*case, restore=restore, finish=finish, bulk=bulk)


@st.composite
def pauses(draw: st.DrawFn):
    """Things whose one series pauses for many records of the other, across several batches:
    each thing's series are runs of one side (long ones), times rising with ties, a few late."""
    disorder = draw(st.sampled_from([0.0, 0.0, 1.0, 3.0]))
    tolerance = draw(st.sampled_from([None, None, 2.0]))
    spec = JoinSpec(
        "speed", "torque", "power", function="product", disorder=disorder, tolerance=tolerance
    )
    records = []
    for thing in THINGS[: draw(st.integers(1, 3))]:
        t = draw(st.integers(0, 3))
        for _ in range(draw(st.integers(1, 5))):
            quantity = draw(st.sampled_from(QUANTITIES[:2]))
            for _ in range(draw(st.integers(1, 12))):
                t += draw(st.sampled_from([0, 1, 1, 2]))  # ties within and across the series
                shown = t - draw(st.sampled_from([0, 0, 0, 0, 1, 2]))  # disorder, some late
                records.append((thing, quantity, shown * 1000.0, float(t % 3)))
    # the things' records interleaved at random, each thing's kept in order
    by_thing = {thing: [r for r in records if r[0] == thing] for thing in THINGS}
    picks = draw(st.lists(st.sampled_from(THINGS), min_size=len(records), max_size=len(records)))
    mixed = []
    for thing in picks:
        queue = by_thing[thing] or next(q for q in by_thing.values() if q)
        mixed.append(queue.pop(0))
    splits = draw(st.lists(st.integers(1, 15), min_size=1, max_size=4))
    return [spec], mixed, splits


@settings(PROPERTY, max_examples=200)
@given(pauses(), st.booleans())
def test_long_pauses_of_one_series_equal_one_engine_per_thing(case, finish: bool) -> None:
    """One series waits for the other over several batches (its tail grows): the same output
    and state as one engine per thing."""
    _run(*case, restore=False, finish=finish)


def test_blocks_of_five_over_many_things() -> None:
    """The spec's worked example in 300 things at once, each shifted, in small batches."""
    base = blocks_of_five(20)
    records = [
        (f"m{k}", "L" if side == "left" else "R", t + 7_000.0 * k, v)
        for t_index in range(20)
        for k in range(300)
        for side, t, v in [base[t_index]]
    ]
    spec = JoinSpec("L", "R", "out", function="product")
    router, reference = JoinRouter([spec]), PerThingRouter([spec])
    counts: dict[str, int] = {}
    for start in range(0, len(records), 777):
        columns = _columns(records, start, start + 777)
        steps = router.process(*columns)
        assert_same_steps(steps, reference.process(*columns))
        for s in steps:
            counts[s.thing] = counts.get(s.thing, 0) + len(s.step.pairs)
    assert set(counts.values()) == {23}
    finish = router.finish()
    assert_same_steps(finish, reference.finish())
    assert {len(s.step.pairs) for s in finish} == {4}
    assert finish.pair_count == 4 * 300
    assert router.state_size == reference.state_size


def test_steps_read_like_a_list() -> None:
    spec = JoinSpec("L", "R", "out", function="product")
    steps = JoinRouter([spec]).process(
        np.array(["a", "b", "a"], dtype=object),
        np.array(["L", "L", "R"], dtype=object),
        np.array([0.0, 0.0, 1000.0]),
        np.array([1.0, 2.0, 3.0]),
    )
    assert len(steps) == 2
    assert [s.thing for s in steps] == ["a", "b"] == [s.thing for s in steps[:]]
    assert steps[-1].thing == "b"
    assert steps.pair_count == 1
    with pytest.raises(IndexError):
        steps[2]


@pytest.mark.parametrize("name", ["statestream.join.keys", "statestream.join.things"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
