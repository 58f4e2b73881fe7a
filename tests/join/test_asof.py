"""The batch as-of join: equal to pandas.merge_asof, with worked examples and its errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join.asof import AsofRule, asof_indices

PROPERTY = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pandas_asof(left_key, left_t, right_key, right_t, rule: AsofRule, right_order=None):
    """The reference: pandas.merge_asof on left sorted by t and right sorted by (t, right_order),
    both stably, mapped back to the given row positions (-1: no match)."""
    right_order = np.arange(len(right_t)) if right_order is None else right_order
    left = pd.DataFrame({"t": left_t, "key": left_key, "left_id": np.arange(len(left_t))})
    right = pd.DataFrame({"t": right_t, "key": right_key, "right_id": np.arange(len(right_t))})
    left = left.iloc[np.argsort(left_t, kind="stable")]
    right = right.iloc[np.lexsort((right_order, right_t))]
    merged = pd.merge_asof(
        left,
        right,
        on="t",
        by="key",
        direction=rule.direction,
        tolerance=rule.tolerance,
        allow_exact_matches=rule.allow_exact_matches,
    )
    expected = np.full(len(left_t), -1, dtype=np.int64)
    expected[merged["left_id"].to_numpy()] = merged["right_id"].fillna(-1).to_numpy(np.int64)
    return expected


@st.composite
def asof_cases(draw: st.DrawFn):
    """Two sides over a few keys (ints or strings), unsorted, with ties in t on both sides and
    across them; t int64, or float64 at steps of 0.1 (so that rounding makes near-ties); a rule."""
    t_is_float = draw(st.booleans())
    key_names = draw(st.sampled_from([np.array([0, 1, 2]), np.array(["a", "bb", "c"], object)]))

    def side(max_size: int):
        rows = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12)), max_size=max_size))
        key = key_names[[k for k, _ in rows]] if rows else key_names[:0]
        steps = np.array([t for _, t in rows], dtype=np.int64)
        return key, (steps * 0.1 if t_is_float else steps)

    left_key, left_t = side(20)
    right_key, right_t = side(20)
    right_order = draw(st.permutations(range(len(right_t))))
    tolerance = draw(st.sampled_from([None, 0, 1, 3]))
    if tolerance is not None and t_is_float:
        tolerance = tolerance * 0.1  # pandas wants a float tolerance for float times
    rule = AsofRule(
        draw(st.sampled_from(["backward", "forward", "nearest"])), tolerance, draw(st.booleans())
    )
    return left_key, left_t, right_key, right_t, rule, np.array(right_order, dtype=np.int64)


@PROPERTY
@given(asof_cases())
def test_equals_pandas_merge_asof(case) -> None:
    left_key, left_t, right_key, right_t, rule, _ = case
    got = asof_indices(left_key, left_t, right_key, right_t, rule)
    np.testing.assert_array_equal(got, pandas_asof(left_key, left_t, right_key, right_t, rule))


@PROPERTY
@given(asof_cases())
def test_equals_pandas_with_a_right_order(case) -> None:
    """Ties in t among right rows are broken by right_order, as if right were sorted by it."""
    left_key, left_t, right_key, right_t, rule, order = case
    got = asof_indices(left_key, left_t, right_key, right_t, rule, right_order=order)
    expected = pandas_asof(left_key, left_t, right_key, right_t, rule, order)
    np.testing.assert_array_equal(got, expected)


# ---- worked examples --------------------------------------------------------------------------


def _one_key(left_t, right_t, rule: AsofRule, right_order=None) -> list[int]:
    """asof_indices for one key, checked against pandas."""
    left_t, right_t = np.array(left_t), np.array(right_t)
    left_key, right_key = np.zeros(len(left_t), int), np.zeros(len(right_t), int)
    found = asof_indices(left_key, left_t, right_key, right_t, rule, right_order=right_order)
    expected = pandas_asof(left_key, left_t, right_key, right_t, rule, right_order)
    assert list(found) == list(expected)
    return list(found)


def test_backward_takes_the_last_row_at_or_before_and_forward_the_first_at_or_after() -> None:
    """Right rows at 3, 5, 5, 7 (given in that order); a left row at 5. Backward takes the last
    of the two at 5 (index 2), forward the first (index 1); without exact matches, backward takes
    the row at 3 and forward the row at 7."""
    right = [3, 5, 5, 7]
    assert _one_key([5], right, AsofRule("backward")) == [2]
    assert _one_key([5], right, AsofRule("forward")) == [1]
    assert _one_key([5], right, AsofRule("backward", allow_exact_matches=False)) == [0]
    assert _one_key([5], right, AsofRule("forward", allow_exact_matches=False)) == [3]


def test_right_order_breaks_ties_in_t() -> None:
    """The two right rows at 5 in the other order: the one with the larger order is last."""
    order = np.array([0, 2, 1, 3])
    assert _one_key([5], [3, 5, 5, 7], AsofRule("backward"), order) == [1]
    assert _one_key([5], [3, 5, 5, 7], AsofRule("forward"), order) == [2]


def test_nearest_breaks_a_tie_towards_the_backward_row() -> None:
    """A left row at 5 between right rows at 3 and 7 (both 2 away) takes the row at 3; between 4
    and 5 (1 and 0 away), the row at 5; between 3 and 6, the row at 6."""
    assert _one_key([5], [3, 7], AsofRule("nearest")) == [0]
    assert _one_key([5], [7, 3], AsofRule("nearest")) == [1]
    assert _one_key([5], [4, 5], AsofRule("nearest")) == [1]
    assert _one_key([5], [3, 6], AsofRule("nearest")) == [1]


def test_nearest_without_exact_matches_never_takes_the_row_at_the_same_time() -> None:
    """Right rows at 3, 5, 6 and a left row at 5: the row at 5 is skipped, and the nearer of 3
    (2 away) and 6 (1 away) is taken. With only the row at 5, no match."""
    rule = AsofRule("nearest", allow_exact_matches=False)
    assert _one_key([5], [3, 5, 6], rule) == [2]
    assert _one_key([5], [5], rule) == [-1]
    assert _one_key([5], [5, 5], AsofRule("nearest")) == [1]  # exact: the last of the two


def test_tolerance_drops_a_candidate_and_does_not_search_farther() -> None:
    """Right rows at 6 and 13, a left row at 10, tolerance 3: backward finds 6 (4 away): none;
    forward finds 13 (3 away, not more than 3): taken; nearest: 13, the only one left."""
    assert _one_key([10], [6, 13], AsofRule("backward", tolerance=3)) == [-1]
    assert _one_key([10], [6, 13], AsofRule("forward", tolerance=3)) == [1]
    assert _one_key([10], [6, 13], AsofRule("nearest", tolerance=3)) == [1]
    assert _one_key([10], [6, 13], AsofRule("nearest", tolerance=2)) == [-1]


def test_keys_never_mix_and_left_rows_keep_their_order() -> None:
    """Left rows (b@4, a@9, a@1) and right rows (a@0, b@2, a@8): each left row takes the last
    earlier right row of its own key; a@1 takes a@0, not b@2."""
    left_key, left_t = np.array(["b", "a", "a"]), np.array([4, 9, 1])
    found = asof_indices(
        left_key, left_t, np.array(["a", "b", "a"]), np.array([0, 2, 8]), AsofRule()
    )
    assert list(found) == [1, 2, 0]


def test_empty_sides() -> None:
    empty = np.empty(0, dtype=np.int64)
    assert list(asof_indices(empty, empty, np.array([1]), np.array([1]), AsofRule())) == []
    assert list(asof_indices(np.array([1]), np.array([1]), empty, empty, AsofRule())) == [-1]


# ---- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"direction": "sideways"}, "direction must be one of backward, forward, nearest"),
        ({"tolerance": -1}, "tolerance must be >= 0"),
        ({"tolerance": float("nan")}, "tolerance must be >= 0"),
        ({"tolerance": "1s"}, "tolerance must be a number or None"),
        ({"tolerance": True}, "tolerance must be a number or None"),
    ],
)
def test_a_bad_rule_is_a_clear_value_error(arguments, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AsofRule(**arguments)


def test_bad_arrays_are_clear_value_errors() -> None:
    one, two = np.array([1]), np.array([1, 2])
    with pytest.raises(ValueError, match="left_key and left_t must have the same length"):
        asof_indices(one, two, one, one, AsofRule())
    with pytest.raises(ValueError, match="right_key and right_t must have the same length"):
        asof_indices(one, one, two, one, AsofRule())
    with pytest.raises(ValueError, match="right_order must be a 1-D array of 1 rows"):
        asof_indices(one, one, one, one, AsofRule(), right_order=two)
    with pytest.raises(ValueError, match="both be integers or both floats"):
        asof_indices(one, one, one, np.array([1.0]), AsofRule())
    with pytest.raises(ValueError, match="left t must be an integer or float array"):
        asof_indices(one, np.array(["x"]), one, one, AsofRule())
    with pytest.raises(ValueError, match="must be 1-D"):
        asof_indices(one, np.ones((1, 1)), one, np.ones(1), AsofRule())
