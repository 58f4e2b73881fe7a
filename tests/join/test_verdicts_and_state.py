"""Late, duplicate and malformed verdicts, and the bound on the state."""

from __future__ import annotations

import math
import random

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
    EngineFinished,
    JoinSpec,
    SeriesBatch,
    StateFormatError,
    pack_states,
    unpack_states,
)
from statestream.testing import blocks_of_five, classify, run_join

SPEC = JoinSpec("L", "R", "out", function="product")


def _engine_verdicts(spec: JoinSpec, records, splits) -> dict[int, int]:
    engine, verdicts, start, k = ComplementJoin(spec), {}, 0, 0
    while start < len(records):
        chunk = list(range(start, min(start + splits[k % len(splits)], len(records))))
        idx = {s: [i for i in chunk if records[i][0] == s] for s in ("left", "right")}
        batches = {
            s: SeriesBatch.of([records[i][1] for i in ix], [records[i][2] for i in ix], ix)
            for s, ix in idx.items()
        }
        step = engine.process(batches["left"], batches["right"])
        for side, out in (("left", step.left), ("right", step.right)):
            verdicts.update(zip(idx[side], out.codes.tolist(), strict=True))
        start, k = chunk[-1] + 1, k + 1
    return verdicts


_times = st.one_of(st.integers(0, 20).map(float), st.sampled_from([math.nan, math.inf]))
_values = st.sampled_from([1.0, 2.0, math.nan])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["left", "right"]), _times, _values), max_size=40),
    st.sampled_from([0.0, 3.0]),
    st.lists(st.integers(1, 5), min_size=1, max_size=4),
)
def test_verdicts_equal_the_record_by_record_rules(raw, disorder, splits) -> None:
    records = [(s, t * 1000.0, v) for s, t, v in raw]
    spec = JoinSpec("L", "R", "out", function="product", disorder=disorder)
    assert _engine_verdicts(spec, records, splits) == classify(spec, records)


def test_verdict_kinds_on_a_small_series() -> None:
    engine = ComplementJoin(JoinSpec("L", "R", "out", function="ratio"))
    step = engine.process(
        left=SeriesBatch.of([1000, 3000, 2000, 3000, math.nan], [1.0, 1.0, 1.0, 1.0, 1.0]),
        right=SeriesBatch.of([1000, 2000], [0.0, math.inf]),  # ratio cannot divide by 0
    )
    assert step.left.codes.tolist() == [ACCEPTED, ACCEPTED, LATE, DUPLICATE, MALFORMED]
    assert step.left.watermark[2] == 3000.0  # the watermark the late record met
    assert step.right.codes.tolist() == [MALFORMED, MALFORMED]


def test_state_stays_small_in_steady_state() -> None:
    rng = random.Random(7)
    engine, sizes = ComplementJoin(JoinSpec("L", "R", "out", disorder=30)), []
    t = 0.0
    for _ in range(300):
        left_t, right_t = [], []
        for _ in range(50):
            t += 1000.0
            (left_t if rng.random() < 0.5 else right_t).append(t - rng.uniform(0, 20_000))
        engine.process(
            SeriesBatch.of(left_t, np.ones(len(left_t))),
            SeriesBatch.of(right_t, np.ones(len(right_t))),
        )
        sizes.append(engine.state_size)
    # 30 s of disorder at one record a second keeps about 60 records pending, not the history
    assert max(sizes[50:]) < 120


def test_records_after_finish_are_refused() -> None:
    engine = ComplementJoin(SPEC)
    engine.finish()
    with pytest.raises(EngineFinished):
        engine.process(left=SeriesBatch.of([1.0], [1.0]))


def test_emission_is_incremental_not_at_the_end() -> None:
    records = blocks_of_five(1000)
    engine, emitted = ComplementJoin(SPEC), []
    for start in range(0, 1000, 100):
        chunk = records[start : start + 100]
        left = [r for r in chunk if r[0] == "left"]
        right = [r for r in chunk if r[0] == "right"]
        step = engine.process(
            SeriesBatch.of([r[1] for r in left], [r[2] for r in left]),
            SeriesBatch.of([r[1] for r in right], [r[2] for r in right]),
        )
        emitted.append(len(step.pairs))
    assert all(n >= 170 for n in emitted[1:])
    assert sum(emitted) == len(run_join(SPEC, records, 100, finish=False))


@given(st.dictionaries(st.text(max_size=12), st.binary(max_size=40), max_size=5))
def test_packed_states_unpack_to_the_same_named_states(states: dict[str, bytes]) -> None:
    assert unpack_states(pack_states(states)) == states


def test_truncated_packed_states_are_refused() -> None:
    packed = pack_states({"vaPower_C11": b"0123456789"})
    for cut in (3, len(packed) - 1):
        with pytest.raises(StateFormatError, match="packed join states end inside"):
            unpack_states(packed[:cut])
