"""Property tests: the engine equals the definition for every interleaving and batch split."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join import JoinSpec
from statestream.testing import Record, brute_force_join, run_join

# small time and value ranges make ties, equal times across the series and duplicates common
_times = st.integers(min_value=0, max_value=30)
_values = st.sampled_from([0.0, 1.0, 2.5, -3.0])


@st.composite
def two_series(draw: st.DrawFn) -> tuple[list[Record], JoinSpec, random.Random]:
    """Two series, each in its own arrival order, interleaved at random, and a spec."""
    left = draw(st.lists(st.tuples(_times, _values), max_size=25))
    right = draw(st.lists(st.tuples(_times, _values), max_size=25))
    disorder = draw(st.sampled_from([0.0, 0.0, 2.0, 5.0]))
    tolerance = draw(st.sampled_from([None, None, 1.0, 4.0]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    spec = JoinSpec("L", "R", "out", function="product", disorder=disorder, tolerance=tolerance)
    as_records = [
        [(side, *_ms(item)) for item in series]
        for side, series in (("left", left), ("right", right))
    ]
    return _interleave(*as_records, rng), spec, rng


def _interleave(left, right, rng: random.Random) -> list[Record]:
    """The two series merged in a random order; each keeps its own order."""
    sides = ["left"] * len(left) + ["right"] * len(right)
    rng.shuffle(sides)
    queues = {"left": iter(left), "right": iter(right)}
    return [next(queues[side]) for side in sides]


def _ms(item: tuple[int, float]) -> tuple[float, float]:
    return item[0] * 1000.0, item[1]


def _reinterleave(records: list[Record], rng: random.Random) -> list[Record]:
    """Another interleaving of the same two series; indices are remapped by `_canon`."""
    left = [r for r in records if r[0] == "left"]
    return _interleave(left, [r for r in records if r[0] == "right"], rng)


def _canon(records: list[Record], pairs) -> set[tuple[int, int]]:
    """Pairs as (k-th left record, k-th right record): independent of the interleaving."""
    rank, counts = {}, {"left": 0, "right": 0}
    for i, (side, _, _) in enumerate(records):
        rank[i] = counts[side]
        counts[side] += 1
    return {(rank[li], rank[ri]) for li, ri in pairs}


def _random_splits(rng: random.Random) -> list[int]:
    return [rng.randint(1, 6) for _ in range(rng.randint(1, 5))]


PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(PROPERTY, max_examples=800)  # the examples of two tests, with and without flush
@given(two_series(), st.booleans())
def test_output_equals_the_definition(case, finish: bool) -> None:
    """With flush: all of J; without: the pairs certain at the end of the input."""
    records, spec, rng = case
    pairs = run_join(spec, records, _random_splits(rng), finish=finish)
    assert len(pairs) == len(set(pairs)), "a pair was emitted twice"
    assert set(pairs) == brute_force_join(spec, records, finish=finish)


@PROPERTY
@given(two_series(), st.booleans())
def test_every_interleaving_and_split_gives_the_same_pairs(case, finish: bool) -> None:
    records, spec, rng = case
    expected = _canon(records, run_join(spec, records, 1_000, finish=finish))
    for _ in range(3):
        other = _reinterleave(records, rng)
        got = _canon(other, run_join(spec, other, _random_splits(rng), finish=finish))
        assert got == expected


@PROPERTY
@given(two_series(), st.booleans())
def test_export_and_restore_continue_exactly(case, finish: bool) -> None:
    records, spec, rng = case
    splits = _random_splits(rng)
    plain = run_join(spec, records, splits, finish=finish)
    restored = run_join(spec, records, splits, finish=finish, restore_every=rng.randint(1, 3))
    assert restored == plain
