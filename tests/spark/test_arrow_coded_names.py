"""`arrow_coded_names` gives Arrow's `dictionary_encode` codes and names for any string column,
by the comparison path (few names of one byte length) and by the hash path alike;
`arrow_utf8_names` views the column's bytes where it has no nulls."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join.names import CodedNames, Utf8Names
from statestream.spark._bucket_join import (
    FEW_NAMES,
    _few_equal_width_names,
    arrow_coded_names,
    arrow_utf8_names,
)

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# names of one byte length (3, 8, 12), of others, empty, with multi-byte and NUL characters
NAMES = ["abc", "abd", "bbc", "a\x00c", "é1", "actSpeed", "vaTorque", "actSpeed_C11"]
NAMES += ["vaTorque_C11", "x", "", "\x00", "ab", "abcd", "zzz", "aaa", "bcd", "cde", "def"]


def _expected(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list]:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = column.dictionary_encode()
    return encoded.indices.to_numpy(), encoded.dictionary.to_pylist()


def _assert_same(column: pa.Array | pa.ChunkedArray, order: np.ndarray | None = None) -> None:
    got = arrow_coded_names(column, order)
    codes, names = _expected(column)
    if order is not None:
        codes = codes.take(order)
    assert got.names == names
    assert got.codes.dtype == codes.dtype
    np.testing.assert_array_equal(got.codes, codes)


@st.composite
def columns(draw) -> pa.Array | pa.ChunkedArray:
    """A string column over a few of `NAMES`, maybe sliced, chunked or of large strings."""
    pool = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=FEW_NAMES + 3, unique=True))
    values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=300))
    kind = draw(st.sampled_from([pa.string(), pa.large_string()]))
    column = pa.array(values, kind)
    start = draw(st.integers(0, len(values) - 1))
    column = column.slice(start, draw(st.integers(1, len(values) - start)))
    if draw(st.booleans()) and len(column) > 1:
        cut = draw(st.integers(1, len(column) - 1))
        return pa.chunked_array([column.slice(0, cut), column.slice(cut)])
    return column


@PROPERTY
@given(columns(), st.randoms(use_true_random=False))
def test_codes_and_names_are_those_of_dictionary_encode(column, random) -> None:
    _assert_same(column)
    order = np.arange(len(column))
    random.shuffle(order)
    _assert_same(column, order)


def test_both_paths_are_taken() -> None:
    quantities = pa.array(["vaTorque_C11", "actSpeed_C11"] * 50 + ["vaPower_C11x"])
    assert _few_equal_width_names(quantities) is not None
    _assert_same(quantities)
    many = pa.array([f"m{k:03d}" for k in range(FEW_NAMES + 1)] * 10)
    assert _few_equal_width_names(many) is None
    _assert_same(many)
    first_few_then_many = pa.array(["m000"] * 100 + [f"m{k:03d}" for k in range(FEW_NAMES + 1)])
    assert _few_equal_width_names(first_few_then_many) is None  # found out past the sample
    _assert_same(first_few_then_many)
    widths = pa.array(["ab", "abc"] * 10)
    assert _few_equal_width_names(widths) is None
    _assert_same(widths)
    _assert_same(pa.array(["", ""]))
    assert _few_equal_width_names(pa.array(["a", None, "a"])) is None  # nulls: Arrow's way


def test_names_are_marked_in_order_of_first_record_only_without_an_order() -> None:
    by_comparison, by_hash = pa.array(["bb", "aa", "bb"]), pa.array(["b", "aa", "b", "ccc"] * 3)
    assert _few_equal_width_names(by_comparison) is not None
    assert _few_equal_width_names(by_hash) is None  # names of other lengths: dictionary_encode
    for values in (by_comparison, by_hash):
        assert arrow_coded_names(values).first_seen
        assert not arrow_coded_names(values, np.arange(len(values))[::-1].copy()).first_seen


@PROPERTY
@given(columns(), st.randoms(use_true_random=False))
def test_utf8_names_view_the_values_of_a_column_without_nulls(column, random) -> None:
    """Sliced, chunked or of large strings, in arrival order or another: the values' bytes."""
    order = np.arange(len(column))
    random.shuffle(order)
    for taken in (None, order):
        got = arrow_utf8_names(column, taken)
        assert isinstance(got, Utf8Names)
        values = column.to_pylist()
        expected = values if taken is None else [values[k] for k in taken.tolist()]
        assert got.decoded().tolist() == expected


def test_utf8_names_refuse_records_without_a_name() -> None:
    column = pa.array(["a", None, "b"])
    assert isinstance(arrow_utf8_names(column.slice(0, 1)), Utf8Names)  # no null in the slice
    with pytest.raises(ValueError, match="1 records without a name"):
        arrow_utf8_names(column)
    assert len(arrow_utf8_names(pa.array([], pa.string()))) == 0
    assert isinstance(arrow_utf8_names(pa.array(["a"]).dictionary_encode()), CodedNames)
