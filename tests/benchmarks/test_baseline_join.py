"""The benchmark's baseline computes the same join as the engine, or its ratio means nothing."""

from __future__ import annotations

from benchmarks.baseline_join import baseline_pairs
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.join import JoinSpec
from statestream.testing import blocks_of_five, brute_force_join


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["left", "right"]), st.integers(0, 25), st.sampled_from([1.0, 2.0])
        ),
        max_size=40,
    ),
    st.sampled_from([0.0, 3.0]),
    st.sampled_from([None, 2.0]),
    st.booleans(),
)
def test_baseline_equals_the_definition(raw, disorder, tolerance, finish) -> None:
    records = [(side, t * 1000.0, v) for side, t, v in raw]
    spec = JoinSpec("L", "R", "out", disorder=disorder, tolerance=tolerance)
    pairs = baseline_pairs(records, spec.disorder_ms, spec.tolerance_ms, finish=finish)
    assert len(pairs) == len(set(pairs))
    assert set(pairs) == brute_force_join(spec, records, finish=finish)


def test_baseline_on_blocks_of_five() -> None:
    records = blocks_of_five(20_000)
    assert len(baseline_pairs(records, finish=False)) == 35_987
    assert len(baseline_pairs(records, finish=True)) == 35_991
