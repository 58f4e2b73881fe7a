"""JSON numbers: the vectorized conversion gives exactly the text of the one-value conversion."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from statestream.formats import json_number, json_numbers

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
