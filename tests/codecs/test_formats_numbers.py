"""JSON numbers: the vectorized conversions give exactly the text of the one-value conversion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.codecs.formats import json_number, json_numbers
from statestream.codecs.json_lines import json_lines

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


NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL)


@given(st.lists(st.tuples(NUMBERS, NUMBERS, st.integers(0, 2)), min_size=1))
def test_json_lines_write_each_number_as_json_number(rows: list[tuple[float, float, int]]) -> None:
    """The compiled writer's lines are the heads, texts and `json_number` of each value."""
    heads = [b'{"m": "a", ', b'{"m": "\\u00e9", ', b"{"]
    first, second, codes = (np.array(column) for column in zip(*rows, strict=True))
    texts = [b'"x": ', b', "y": [', b"]}"]
    block = json_lines(heads, codes, texts, [first, second])
    expected = [
        f'{heads[c].decode()}"x": {json_number(x)}, "y": [{json_number(y)}]}}' for x, y, c in rows
    ]
    assert block.decode().split("\n") == expected


def test_json_lines_of_integral_fractional_and_special_values() -> None:
    column = np.array([1554096380468.0, 100.0, -0.0, 0.05, -7.0, 1e-7, float("nan"), 2.0**53])
    block = json_lines([b""], np.zeros(len(column), dtype=np.int64), [b"", b""], [column])
    texts = block.decode().split("\n")
    assert texts == [json_number(x) for x in column.tolist()]
    assert texts[:5] == ["1554096380468", "100", "0", "0.05", "-7"]
    assert texts[6] == "null"


def test_json_lines_refuse_codes_outside_the_heads_and_a_missing_text() -> None:
    with pytest.raises(ValueError, match="index"):
        json_lines([b"a"], np.array([1]), [b"", b""], [np.zeros(1)])
    with pytest.raises(ValueError, match="one text more"):
        json_lines([b"a"], np.array([0]), [b""], [np.zeros(1)])
    assert json_lines([b"a"], np.array([], dtype=np.int64), [b"", b""], [np.zeros(0)]) == b""
