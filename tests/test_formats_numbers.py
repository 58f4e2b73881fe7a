"""JSON numbers: the vectorized conversions give exactly the text of the one-value conversion."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from statestream.formats import json_number, json_numbers
from statestream.pair_json import json_number_column

SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0**53,
    2.0**53 - 1,
    -(2.0**53),
    1e16,
    1.5e16,
    1e-7,
    0.1,
    1554096380468.0,
    1554096380468.5,
    float("inf"),
    float("-inf"),
    float("nan"),
    5e-324,
]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL)))
def test_json_numbers_equal_json_number(values: list[float]) -> None:
    assert json_numbers(np.array(values, dtype=np.float64)) == [json_number(v) for v in values]


def test_special_values() -> None:
    assert json_numbers(np.array(SPECIAL)) == [json_number(v) for v in SPECIAL]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL)))
def test_json_number_column_equals_json_numbers(values: list[float]) -> None:
    column = np.array(values, dtype=np.float64)
    assert json_number_column(column).to_pylist() == json_numbers(column)


def test_json_number_column_of_integral_and_fractional_values() -> None:
    column = np.array([1554096380468.0, 100.0, -0.0, 0.05, 10.0, 1e-7, float("nan"), 7.0])
    assert json_number_column(column).to_pylist() == json_numbers(column)
    assert json_number_column(column).to_pylist()[:4] == ["1554096380468", "100", "0", "0.05"]
