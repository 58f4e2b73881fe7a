"""`KnownNames` codes a string column against a router's names: every record decodes to its own
name, known names keep their index, and a router fed its codes joins as one fed the names."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.join import JoinRouter, export_state
from statestream.spark._bucket_join import KnownNames, arrow_coded_names
from tests.join.test_coded_names import _same_output
from tests.join.test_things import PROPERTY, _columns, cases

NAMES = ["m0", "m1", "m2", "é3", "", "m0 "]


@given(
    st.lists(st.sampled_from(NAMES), unique=True),
    st.lists(st.sampled_from(NAMES), max_size=40),
    st.sampled_from(["plain", "sliced", "chunked", "ordered"]),
)
def test_records_decode_to_their_names_and_known_names_keep_their_index(
    known: list[str], values: list[str], kind: str
) -> None:
    column = pa.array(["x", *values], pa.string())
    order = None
    if kind == "sliced":
        column = column.slice(1)
    elif kind == "chunked":
        column = pa.chunked_array([column.slice(0, 1), column.slice(1)])
    elif kind == "ordered":
        order = np.arange(len(column))[::-1].copy()
    coded = KnownNames(known)(column, order)
    expected = values if kind == "sliced" else ["x", *values]
    if order is not None:
        expected = [expected[k] for k in order]
    assert coded.decoded().tolist() == expected
    assert coded.names[: len(known)] == known
    assert len(set(coded.names)) == len(coded.names)
    if known and set(expected) <= set(known):
        assert coded.names is known  # the router takes these codes as they are


def test_nulls_and_other_types_are_coded_as_arrow_coded_names_codes_them() -> None:
    known = KnownNames(["m1", "m2"])
    with pytest.raises(pa.ArrowInvalid):  # a null has no name: as `arrow_coded_names`
        arrow_coded_names(pa.array(["m1", None]))
    with pytest.raises(pa.ArrowInvalid):
        known(pa.array(["m1", None]))
    column = pa.array(["m2", "m3"], pa.large_string())
    got, expected = known(column), arrow_coded_names(column)
    assert got.names == expected.names
    np.testing.assert_array_equal(got.codes, expected.codes)
    assert KnownNames([1, 2])(pa.array(["m1"])).names == ["m1"]  # names that are not strings


def test_known_names_grow_with_the_list() -> None:
    names: list = []
    known = KnownNames(names)
    assert known(pa.array(["a", "b"])).names == ["a", "b"]
    names += ["b", "a"]
    coded = known(pa.array(["a", "b", "c"]))
    assert coded.codes.tolist() == [1, 0, 2] and coded.names == ["b", "a", "c"]


@PROPERTY
@given(cases())
def test_a_router_fed_known_names_joins_as_one_fed_names(case) -> None:
    specs, records, splits = case
    by_name, by_known = JoinRouter(specs), JoinRouter(specs)
    things_of = KnownNames(by_known.thing_names)
    start, k = 0, 0
    while start < len(records):
        end = start + splits[k % len(splits)]
        things, quantities, t, v, pos = _columns(records, start, end)
        expected = by_name.process(things, quantities, t, v, pos)
        got = by_known.process(
            things_of(pa.array(things, pa.string())),
            arrow_coded_names(pa.array(quantities, pa.string())),
            t,
            v,
            pos,
        )
        _same_output(got, expected)
        start, k = end, k + 1
    _same_output(by_known.finish(), by_name.finish())
    assert [(key, export_state(e)) for key, e in by_known.engines.items()] == [
        (key, export_state(e)) for key, e in by_name.engines.items()
    ]
