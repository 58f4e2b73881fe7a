"""Property tests of the as-of stream: it equals the batch join for every interleaving, split and
restart, emits nothing that a later row could change, and refuses the same late rows always."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join.asof import AsofRule, asof_indices
from statestream.join.asof_stream import AsofStream

from ._asof_runs import Side, late_reference, not_late, run_stream

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_KEYS = {"int": np.array([4, 9, 2]), "str": np.array(["x", "yy", "z"])}


@st.composite
def stream_cases(draw: st.DrawFn, late: bool = False):
    """A rule, a disorder and two sides over a few keys, each side in its arrival order. Times
    are ints or floats at steps of 0.1; unless `late`, they are raised so that no row is late."""
    keys = _KEYS[draw(st.sampled_from(sorted(_KEYS)))]
    scale = draw(st.sampled_from([1, 0.1]))
    disorder = draw(st.sampled_from([0, 0, 1, 3])) * scale
    tolerance = draw(st.sampled_from([None, 0, 1, 4]))

    def side() -> Side:
        rows = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10)), max_size=20))
        key = keys[[k for k, _ in rows]] if rows else keys[:0]
        t = np.array([t for _, t in rows], dtype=np.int64) * scale
        return Side(key, t if late else not_late(key, t, disorder))

    rule = AsofRule(
        draw(st.sampled_from(["backward", "forward", "nearest"])),
        None if tolerance is None else tolerance * scale,
        draw(st.booleans()),
    )
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return rule, disorder, side(), side(), rng


def _batch(rule: AsofRule, left: Side, right: Side) -> np.ndarray:
    return asof_indices(left.key, left.t, right.key, right.t, rule, right_order=right.order)


@PROPERTY
@given(stream_cases())
def test_after_flush_the_stream_equals_the_batch_join(case) -> None:
    """Every left row is emitted exactly once (`Run.take` checks), with asof_indices' match,
    whatever the interleaving, the split into pushes and the restarts from state."""
    rule, disorder, left, right, rng = case
    run, _ = run_stream(rule, disorder, left, right, rng, restore=0.3)
    assert run.late_left == run.late_right == []
    np.testing.assert_array_equal(run.as_array(len(left)), _batch(rule, left, right))


@PROPERTY
@given(stream_cases())
def test_before_flush_every_split_emits_the_same_rows(case) -> None:
    """What is certain at the end of the input does not depend on how it arrived."""
    rule, disorder, left, right, rng = case
    first, _ = run_stream(rule, disorder, left, right, rng, flush=False, most=1)
    for most in (3, 50):
        other, _ = run_stream(rule, disorder, left, right, rng, flush=False, most=most)
        assert other.matches == first.matches


@PROPERTY
@given(stream_cases())
def test_nothing_is_emitted_that_a_later_row_could_change(case) -> None:
    """After the input (no flush), add for every key right rows at every step from its right
    watermark on (and at the watermark itself): the rows emitted keep their match in the batch
    join over everything. Such rows are not late, so they could have come next."""
    rule, disorder, left, right, rng = case
    run, stream = run_stream(rule, disorder, left, right, rng, flush=False)
    scale = 1 if left.t.dtype.kind == "i" else 0.1
    steps = np.arange(-10, 40) * scale
    extra_key, extra_t = [], []
    for key in _KEYS["int" if left.key.dtype.kind == "i" else "str"]:
        mine = right.t[right.key == key]
        watermark = mine.max() - disorder if len(mine) else -np.inf
        times = [t for t in [*steps, watermark] if t >= watermark and np.isfinite(t)]
        extra_key += [key] * len(times)
        extra_t += times
    more = Side(
        np.concatenate([right.key, np.array(extra_key, dtype=right.key.dtype)]),
        np.concatenate([right.t, np.array(extra_t, dtype=right.t.dtype)]),
    )
    expected = _batch(rule, left, more)
    for left_id, right_id in run.matches.items():
        assert right_id == expected[left_id], f"left row {left_id} was emitted too early"
    assert stream.pending_left == len(left) - len(run.matches)


@PROPERTY
@given(stream_cases(late=True))
def test_late_rows_are_the_same_for_every_split_and_the_rest_is_joined(case) -> None:
    """Rows below their own side's watermark come out as late, identically for every split;
    the other rows are joined as asof_indices joins them."""
    rule, disorder, left, right, rng = case
    run, _ = run_stream(rule, disorder, left, right, rng, restore=0.2)
    assert sorted(run.late_left) == late_reference(left, disorder)
    assert sorted(run.late_right) == late_reference(right, disorder)
    other, _ = run_stream(rule, disorder, left, right, rng, most=1)
    assert (sorted(other.late_left), sorted(other.late_right)) == (
        sorted(run.late_left),
        sorted(run.late_right),
    )
    assert other.matches == run.matches
    left_ids = np.setdiff1d(np.arange(len(left)), run.late_left)
    right_ids = np.setdiff1d(np.arange(len(right)), run.late_right)
    expected = asof_indices(
        left.key[left_ids],
        left.t[left_ids],
        right.key[right_ids],
        right.t[right_ids],
        rule,
        right_order=right.order[right_ids],
    )
    assert run.matches == {
        int(i): int(right_ids[j]) if j >= 0 else -1 for i, j in zip(left_ids, expected, strict=True)
    }


@PROPERTY
@given(stream_cases())
def test_the_state_is_numpy_arrays_and_resumes_exactly(case) -> None:
    """A stream rebuilt from to_state after every push emits what the uninterrupted one does."""
    rule, disorder, left, right, rng = case
    seed = rng.random()
    plain, _ = run_stream(rule, disorder, left, right, random.Random(seed))
    restored, stream = run_stream(rule, disorder, left, right, random.Random(seed), restore=1.0)
    assert restored.matches == plain.matches
    assert all(isinstance(array, np.ndarray) for array in stream.to_state().values())
    assert isinstance(AsofStream.from_state(rule, disorder, stream.to_state()), AsofStream)
