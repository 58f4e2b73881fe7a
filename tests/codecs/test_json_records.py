"""The compiled reader of plain records: where it vouches for a value, `json.loads` with
`narrow_record` reads the same record, bit for bit (its numbers: `test_json_numbers`)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.codecs.formats import narrow_record
from statestream.codecs.json_records import scan_records
from tests.codecs.test_json_numbers import bits, doubles, read_text
from tests.fuzz_inputs import FUZZ, hostile

RECORD = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": 5000, "result": 1.5}


def _reference(value: bytes | None, key: bytes | None) -> tuple | None:
    """The record json.loads and narrow_record make of `value` under `key`, or None."""
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    record = narrow_record(obj)
    if isinstance(record, str):
        return None
    thing, quantity, _, _ = record
    expected = f"{thing}.{quantity}".encode("utf-8", "surrogatepass")
    return record if key == expected else None


def _check(values: list[bytes | None], keys: list[bytes | None]) -> np.ndarray:
    scanned = scan_records(pa.array(values, pa.binary()), pa.array(keys, pa.binary()))
    for i, (value, key) in enumerate(zip(values, keys, strict=True)):
        if not scanned.certain[i]:
            continue
        reference = _reference(value, key)
        assert reference is not None, value
        thing, quantity, t, v = reference
        assert key == f"{thing}.{quantity}".encode()
        assert scanned.thing_bytes[i] == len(thing.encode())
        assert (bits(scanned.t[i]), bits(scanned.v[i])) == (bits(t), bits(v)), value
    return scanned.certain


@FUZZ
@given(st.lists(st.tuples(hostile(RECORD) | st.none(), st.booleans()), min_size=1, max_size=8))
def test_a_value_it_vouches_for_is_the_record_json_loads_reads(rows: list) -> None:
    values = [value for value, _ in rows]
    keys = [b"R1.vaTorque_C11" if right else b"R2.x" for _, right in rows]
    _check(values, keys)


names = st.text(min_size=1, max_size=8)


@given(
    st.lists(
        st.tuples(names, names, doubles | st.integers(-(2**70), 2**70), doubles | st.integers()),
        min_size=1,
        max_size=10,
    ),
    st.booleans(),
)
def test_good_records_without_escapes_are_vouched_for(rows: list, spaced: bool) -> None:
    separators = (", ", ": ") if spaced else (",", ":")
    values = [
        json.dumps(
            {"thing": a, "quantity": b, "phenomenonTime": t, "result": v},
            separators=separators,
            ensure_ascii=False,
        ).encode("utf-8", "surrogatepass")
        for a, b, t, v in rows
    ]
    keys = [f"{a}.{b}".encode("utf-8", "surrogatepass") for a, b, _, _ in rows]
    certain = _check(values, keys)
    for (a, b, _, _), value, sure in zip(rows, values, certain, strict=True):
        plain = all(c >= " " and c not in '"\\' for c in a + b)  # json.dumps escapes no other
        if plain and _fits(value):
            assert sure, value


def _fits(value: bytes) -> bool:
    """Whether the value's numbers have at most 19 digits and a power of ten within ±308."""
    obj = json.loads(value)
    texts = [json.dumps(obj["phenomenonTime"]), json.dumps(obj["result"])]
    return all(read_text(text)[2] for text in texts)


@pytest.mark.parametrize(
    "value",
    [
        b'{"thing": "R1", "thing": "R2", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 1, "x": [1]}',
        b'{"thing": "R\\u0031", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": NaN}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 1} x',
        b'{"thing": "", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5}',
        b'{"thing": "R\xed\xa0\x80", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R\xc0\xb1", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R\xe2\x82", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R\xf4\x90\x80\x80", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 1e400, "result": 1}',
        b'\xef\xbb\xbf{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 1}',
    ],
)
def test_odd_values_are_left_to_python(value: bytes) -> None:
    # …and no UTF-8: a surrogate, an overlong form, a cut character, past U+10FFFF
    thing = value.split(b'"')[3]
    assert not _check([value], [thing + b".q"])[0]


@pytest.mark.parametrize("thing", ["Zürich", "Työkone-7", "機械", "R😀", "\u2028"])
def test_names_in_utf8_are_vouched_for(thing: str) -> None:
    value = f'{{"thing": "{thing}", "quantity": "q", "phenomenonTime": 5, "result": 1}}'
    assert _check([value.encode()], [f"{thing}.q".encode()]).tolist() == [True]


def test_a_record_under_another_key_or_none_is_left_to_python() -> None:
    value = b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 1}'
    assert _check([value] * 4, [b"R1.q", b"R1.qq", None, b"R1q."]).tolist() == [1, 0, 0, 0]


def test_sliced_and_chunked_columns_are_read_in_place() -> None:
    values = [
        b'{"thing": "M%d", "quantity": "q", "phenomenonTime": %d, "result": 0.5}' % (i, i)
        for i in range(6)
    ]
    keys = [b"M%d.q" % i for i in range(6)]
    chunked = pa.chunked_array([pa.array(values[:2]), pa.array(values[2:]).slice(1)])
    key_chunks = pa.chunked_array([pa.array(keys[:2]), pa.array(keys[2:]).slice(1)])
    scanned = scan_records(chunked, key_chunks)
    assert scanned.certain.all()
    assert scanned.t.tolist() == [0, 1, 3, 4, 5]
    assert scanned.thing_bytes.tolist() == [2] * 5


def test_a_number_json_loads_refuses_is_left_to_python_in_any_field() -> None:
    huge = b"1" * 4301  # past Python's limit of integer digits: json.loads raises
    value = b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 1, "id": %s}' % huge
    assert _reference(value, b"R1.q") is None
    assert not _check([value], [b"R1.q"])[0]


def test_keys_and_values_cut_unlike_are_read_together() -> None:
    values = [
        b'{"thing": "M%d", "quantity": "q", "phenomenonTime": %d, "result": 1}' % (i, i)
        for i in range(5)
    ]
    keys = [b"M%d.q" % i for i in range(5)]
    scanned = scan_records(
        pa.chunked_array([pa.array(values[:3]), pa.array(values[3:])]),
        pa.chunked_array([pa.array(keys[:1]), pa.array(keys[1:])]),
    )
    assert scanned.certain.all() and scanned.t.tolist() == [0, 1, 2, 3, 4]
    empty = scan_records(pa.chunked_array([], pa.binary()), pa.chunked_array([], pa.binary()))
    assert len(empty.certain) == 0
