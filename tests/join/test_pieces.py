"""Calls with more than `MAX_PIECE` records of one thing, held to the spec's definition.

`ComplementJoin.process` cuts a batch of more than `MAX_PIECE` (65,536) records into pieces, and
`ThingsJoin` hands a thing with that many records in one call to its own `ComplementJoin`. The
pieces must not show: the pairs (each once, with their records' times and values and the result),
and every record's verdict equal those of `statestream.testing.brute_force_join` and `classify`,
which evaluate the spec record by record in plain Python and know nothing of the engine, of
pieces or of `MAX_PIECE`. The big tests take the piece path for real (the limit untouched);
the property test makes it common in small inputs by lowering the limit in the code under test
only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.join import (
    ACCEPTED,
    DUPLICATE,
    LATE,
    MALFORMED,
    ComplementJoin,
    JoinRouter,
    JoinSpec,
    SeriesBatch,
    ThingsJoin,
)
from statestream.join import engine as engine_module
from statestream.join import things as things_module
from statestream.testing import Record, brute_force_join, classify
from tests.join.test_things import PROPERTY, cases

LIMIT = 1 << 16  # `MAX_PIECE` as documented (65,536), written here: the inputs are sized by it
RESULTS: dict[str, Callable[[float, float], float]] = {  # the result functions, by definition
    "product": lambda left, right: left * right,
    "ratio": lambda left, right: left / right,
    "difference": lambda left, right: left - right,
}
Emitted = dict[str, list]  # pair column → values, over all calls


def test_the_limit_is_the_one_these_tests_are_sized_for() -> None:
    assert engine_module.MAX_PIECE == things_module.MAX_PIECE == LIMIT


def _one_thing(n: int, rng: np.random.Generator, disorder_ms: float) -> list[Record]:
    """`n` records (side, ms, value) of one thing in arrival order: each series in runs of up to
    60 records while the other pauses, times rising in steps of 0–2 s (ties within and across
    the series), some 3 s ahead of that clock and some up to `disorder_ms` + 2 s behind it (so
    that some are late), values from four (so that equal time and value, a duplicate, is
    common), and a few malformed (NaN or infinite time, NaN value)."""
    runs = rng.integers(1, 61, size=n)
    side = np.repeat(np.arange(len(runs)) % 2, runs)[:n]
    clock = np.cumsum(rng.choice([0, 1, 1, 2], size=n)) * 1000.0
    late = rng.random(n) < 0.05
    jitter = np.where(late, -rng.uniform(0, disorder_ms + 2000.0, n), 0.0)
    jitter[rng.random(n) < 0.02] = 3000.0
    t = clock + np.round(jitter, -2)
    v = rng.choice([0.0, 1.0, 2.5, -3.0], size=n)
    bad = rng.random(n) < 0.002
    t[bad] = rng.choice([math.nan, math.inf, -math.inf], size=int(bad.sum()))
    v[rng.random(n) < 0.002] = math.nan
    sides = np.array(["left", "right"])[side]
    return list(zip(sides.tolist(), t.tolist(), v.tolist(), strict=True))


def _engine_run(
    spec: JoinSpec, records: Sequence[Record], cuts: Sequence[int], finish: bool
) -> tuple[Emitted, dict[int, int]]:
    """One `ComplementJoin` over `records`, called once per slice between `cuts`; the emitted
    pairs (positions: indices into `records`) and every record's verdict."""
    engine = ComplementJoin(spec)
    sides = np.array([r[0] for r in records])
    t = np.array([r[1] for r in records])
    v = np.array([r[2] for r in records])
    emitted: Emitted = {}
    verdicts: dict[int, int] = {}
    bounds = [0, *cuts, len(records)]
    for start, end in itertools.pairwise(bounds):
        rows = [start + np.flatnonzero(sides[start:end] == side) for side in ("left", "right")]
        step = engine.process(*(SeriesBatch(t[r], v[r], r) for r in rows))
        _collect(emitted, step.pairs)
        for r, out in zip(rows, (step.left, step.right), strict=True):
            verdicts.update(zip(r.tolist(), out.codes.tolist(), strict=True))
    if finish:
        _collect(emitted, engine.finish().pairs)
    return emitted, verdicts


def _collect(emitted: Emitted, pairs) -> None:
    for name in ("left_pos", "right_pos", "left_t", "left_v", "right_t", "right_v", "result"):
        emitted.setdefault(name, []).extend(getattr(pairs, name).tolist())


def assert_as_defined(
    spec: JoinSpec, records: Sequence[Record], emitted: Emitted, finish: bool
) -> None:
    """The emitted pairs are the definition's, each once, with their records' times and values
    and the result function's value (`records`' indices are the pairs' positions)."""
    got = list(zip(emitted.get("left_pos", []), emitted.get("right_pos", []), strict=True))
    assert len(got) == len(set(got)), "a pair was emitted twice"
    expected = brute_force_join(spec, records, finish=finish)
    assert set(got) == expected, (len(set(got) - expected), len(expected - set(got)))
    for k, (left, right) in enumerate(got):
        _, lt, lv = records[left]
        _, rt, rv = records[right]
        row = [emitted[name][k] for name in ("left_t", "left_v", "right_t", "right_v", "result")]
        assert row == [lt, lv, rt, rv, RESULTS[spec.function_name](lv, rv)], (left, right)


BIG = 150_000


@pytest.mark.parametrize(
    ("seed", "disorder", "tolerance", "function", "cuts", "finish"),
    [
        (1, 0.0, None, "product", [], True),  # one call of 150,000: three pieces
        (2, 2.0, None, "ratio", [70_000], False),  # 70,000 then 80,000: two pieces each
        (3, 5.0, 3.0, "difference", [70_000], True),
        (4, 2.0, 1.0, "product", [1_000, 71_000], True),  # small, big, big
    ],
)
def test_an_engine_call_over_a_piece_gives_the_definition(
    seed: int,
    disorder: float,
    tolerance: float | None,
    function: str,
    cuts: list[int],
    finish: bool,
) -> None:
    spec = JoinSpec("L", "R", "out", function=function, disorder=disorder, tolerance=tolerance)
    records = _one_thing(BIG, np.random.default_rng(seed), spec.disorder_ms)
    pieces = mock.patch.object(
        ComplementJoin,
        "_process_in_pieces",
        autospec=True,
        side_effect=ComplementJoin._process_in_pieces,
    )
    with pieces as spy:
        emitted, verdicts = _engine_run(spec, records, cuts, finish)
    bounds = [0, *cuts, BIG]
    calls_over = sum(end - start > LIMIT for start, end in itertools.pairwise(bounds))
    assert spy.call_count == calls_over >= 1  # the piece path was taken, once per big call
    expected_verdicts = classify(spec, records)
    assert verdicts == expected_verdicts
    assert set(expected_verdicts.values()) == {ACCEPTED, MALFORMED, LATE, DUPLICATE}
    assert_as_defined(spec, records, emitted, finish)


def _router_run(
    specs: list[JoinSpec], rows: Sequence[tuple[str, str, float, float]], cuts, finish: bool
) -> tuple[dict[tuple[int, str], Emitted], dict[tuple[int, int], int]]:
    """A `JoinRouter` over `rows` (thing, quantity, ms, value), called once per slice between
    `cuts`: per (spec index, thing) its emitted pairs (positions: indices into `rows`), and per
    (spec index, row) the verdict."""
    router = JoinRouter(specs)
    columns = (
        np.array([r[0] for r in rows], dtype=object),
        np.array([r[1] for r in rows], dtype=object),
        np.array([r[2] for r in rows], dtype=np.float64),
        np.array([r[3] for r in rows], dtype=np.float64),
        np.arange(len(rows), dtype=np.int64),
    )
    emitted: dict[tuple[int, str], Emitted] = {}
    verdicts: dict[tuple[int, int], int] = {}
    bounds = [0, *cuts, len(rows)]

    def add(steps, start: int) -> None:
        for s in steps:
            index = specs.index(s.spec)
            _collect(emitted.setdefault((index, s.thing), {}), s.step.pairs)
            for r, out in ((s.left_rows, s.step.left), (s.right_rows, s.step.right)):
                for row, code in zip((start + r).tolist(), out.codes.tolist(), strict=True):
                    assert (index, row) not in verdicts
                    verdicts[index, row] = code

    for start, end in itertools.pairwise(bounds):
        add(router.process(*(c[start:end] for c in columns)), start)
    if finish:
        add(router.finish(), 0)
    return emitted, verdicts


def assert_router_as_defined(
    specs: list[JoinSpec],
    rows: Sequence[tuple[str, str, float, float]],
    emitted: dict[tuple[int, str], Emitted],
    verdicts: dict[tuple[int, int], int],
    finish: bool,
) -> None:
    """Per spec and thing, the pairs and verdicts of the definition on that thing's records of
    the spec's two quantities (and no verdict for a record of neither)."""
    expected_verdicts: dict[tuple[int, int], int] = {}
    rows_of: dict[str, list[int]] = {}
    for k, r in enumerate(rows):
        rows_of.setdefault(r[0], []).append(k)
    for index, spec in enumerate(specs):
        for thing, mine_rows in rows_of.items():
            at = [k for k in mine_rows if rows[k][1] in (spec.left, spec.right)]
            if not at:
                assert (index, thing) not in emitted
                continue
            records = [("left" if rows[k][1] == spec.left else "right", *rows[k][2:]) for k in at]
            local = {row: k for k, row in enumerate(at)}
            mine = emitted.get((index, thing), {})
            for side in ("left_pos", "right_pos"):
                mine[side] = [local[row] for row in mine.get(side, [])]
            assert_as_defined(spec, records, mine, finish)
            expected_verdicts.update(
                ((index, at[k]), code) for k, code in classify(spec, records).items()
            )
    assert verdicts == expected_verdicts


def _interleaved(by_thing: dict[str, list], rng: np.random.Generator) -> list:
    """The things' records merged in a random order; each thing's keep their own order."""
    keys = np.concatenate([np.sort(rng.random(len(records))) for records in by_thing.values()])
    merged = [record for records in by_thing.values() for record in records]
    return [merged[k] for k in np.argsort(keys, kind="stable").tolist()]


def test_a_thing_over_a_piece_among_small_things_gives_the_definition() -> None:
    """One thing with over `MAX_PIECE` records of the first spec in each of two calls (its own
    `ComplementJoin`, in pieces) and fewer of the second spec (the compiled pass); 40 small
    things beside it in the same calls; records of a quantity in no spec; two specs sharing a
    quantity."""
    rng = np.random.default_rng(11)
    specs = [
        JoinSpec("speed", "torque", "power", function="product", disorder=2.0),
        JoinSpec("torque", "current", "slip", function="difference", tolerance=2.0),
    ]
    big = [
        ("big", "speed" if side == "left" else "current" if k % 10 == 0 else "torque", t, v)
        for k, (side, t, v) in enumerate(_one_thing(180_000, rng, 2000.0))
    ]
    quantities = ["speed", "torque", "current", "noise"]
    small = {
        f"m{k}": [
            (f"m{k}", quantities[int(rng.integers(4))], t, v)
            for _, t, v in _one_thing(int(rng.integers(1, 400)), rng, 2000.0)
        ]
        for k in range(40)
    }
    halves = [{thing: rs[: len(rs) // 2] for thing, rs in small.items()}]
    halves.append({thing: rs[len(rs) // 2 :] for thing, rs in small.items()})
    calls = [
        _interleaved({"big": big[:100_000], **halves[0]}, rng),
        _interleaved({"big": big[100_000:], **halves[1]}, rng),
    ]
    rows = calls[0] + calls[1]
    one = mock.patch.object(
        ThingsJoin, "_process_one", autospec=True, side_effect=ThingsJoin._process_one
    )
    with one as spy:
        emitted, verdicts = _router_run(specs, rows, [len(calls[0])], finish=True)
    # the big thing went its own way in each call where a spec had more than a piece of it
    over = [
        sum(r[0] == "big" and r[1] in (spec.left, spec.right) for r in call) > LIMIT
        for call in calls
        for spec in specs
    ]
    assert over == [True, False, True, False]
    assert spy.call_count == 2
    assert_router_as_defined(specs, rows, emitted, verdicts, finish=True)


@settings(PROPERTY, max_examples=150)
@given(cases(), st.booleans())
def test_things_with_more_records_than_a_piece_give_the_definition(case, finish: bool) -> None:
    """With the limit lowered to 4 records in the code under test (the reference has none),
    most things of most calls take the piece path."""
    specs, records, splits = case
    cuts, end, k = [], 0, 0
    while end < len(records):
        end += splits[k % len(splits)]
        cuts.append(min(end, len(records)))
        k += 1
    with ExitStack() as stack:
        for module in (engine_module, things_module):
            stack.enter_context(mock.patch.object(module, "MAX_PIECE", 4))
        emitted, verdicts = _router_run(specs, records, cuts[:-1], finish)
    assert_router_as_defined(specs, records, emitted, verdicts, finish)
