"""The batch as-of join equals polars' `join_asof` where polars and pandas define the same match:
right times distinct within a key (polars does not say which of equal right times it takes) and,
for `nearest`, no left row halfway between two right rows (pandas takes the earlier one, a
documented rule polars does not give). `tests/join/test_asof.py` holds the pandas property on
every input, ties included."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given

from statestream.join.asof import AsofRule, asof_indices
from tests.join.test_asof import PROPERTY, asof_cases, pandas_asof


def polars_asof(left_key, left_t, right_key, right_t, rule: AsofRule) -> np.ndarray:
    """polars' join_asof of the two sides, both sorted by t, mapped back to the given row
    positions (-1: no match)."""
    left = pl.DataFrame({"t": left_t, "key": _plain(left_key), "left_id": np.arange(len(left_t))})
    right = pl.DataFrame(
        {"t": right_t, "key": _plain(right_key), "right_id": np.arange(len(right_t))}
    )
    joined = left.sort("t").join_asof(
        right.sort("t"),
        on="t",
        by="key",
        strategy=rule.direction,  # type: ignore[arg-type]
        tolerance=rule.tolerance,
        allow_exact_matches=rule.allow_exact_matches,
        check_sortedness=False,  # sorted by t just above, hence within each key
    )
    found = np.full(len(left_t), -1, dtype=np.int64)
    ids = joined["right_id"].fill_null(-1).to_numpy().astype(np.int64)
    found[joined["left_id"].to_numpy()] = ids
    return found


def _plain(key: np.ndarray) -> np.ndarray:
    """Keys as polars joins them: strings as str, not Python objects."""
    return key.astype(str) if key.dtype == object else key


def first_of_each_time(key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The positions of the first row of each (key, t): the side without equal times in a key."""
    seen: set[tuple[object, float]] = set()
    kept = []
    for i, pair in enumerate(zip(key.tolist(), t.tolist(), strict=True)):
        if pair not in seen:
            seen.add(pair)
            kept.append(i)
    return np.array(kept, dtype=np.int64)


def halfway(left_key, left_t, right_key, right_t) -> np.ndarray:
    """Per left row: whether two right rows of its key are at the same distance from it, one
    before and one after it."""
    rows = []
    for key, t in zip(left_key, left_t, strict=True):
        times = right_t[right_key == key]
        before, after = times[times < t], times[times > t]
        rows.append(
            bool(len(before) and len(after) and np.isclose(t - before.max(), after.min() - t))
        )
    return np.array(rows, dtype=bool)


@PROPERTY
@given(asof_cases())
def test_equals_polars_join_asof_where_both_define_the_match(case) -> None:
    left_key, left_t, right_key, right_t, rule, _ = case
    first = first_of_each_time(right_key, right_t)  # of equal right times, polars' pick is open
    right_key, right_t = right_key[first], right_t[first]
    got = asof_indices(left_key, left_t, right_key, right_t, rule)
    expected = polars_asof(left_key, left_t, right_key, right_t, rule)
    compared = np.ones(len(left_t), dtype=bool)
    if rule.direction == "nearest":
        compared = ~halfway(left_key, left_t, right_key, right_t)
    np.testing.assert_array_equal(got[compared], expected[compared])
    # and pandas agrees on every row (the property of test_asof.py, on these inputs too)
    np.testing.assert_array_equal(got, pandas_asof(left_key, left_t, right_key, right_t, rule))
