"""Decoding Kafka values into record columns: the fast path, the per-value path, the envelopes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.ingest.base import MachineRecord
from statestream.ingest.envelope import codec_for
from statestream.jobs import record_decoding
from statestream.jobs.record_decoding import decode_rows, decode_values

names = st.text(min_size=1, max_size=8)
records = st.lists(
    st.tuples(
        names,
        names,
        st.integers(0, 2**53) | st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False),
    ),
    max_size=20,
)


def _plain(thing, quantity, time, result) -> bytes:
    return json.dumps(
        {"thing": thing, "quantity": quantity, "phenomenonTime": time, "result": result}
    ).encode()


def _columns(decoded: dict[str, np.ndarray]) -> list[tuple]:
    return list(
        zip(
            *(decoded[name].tolist() for name in ("thing", "quantity", "t", "v", "reason")),
            strict=True,
        )
    )


@given(records)
def test_the_fast_path_gives_what_each_value_alone_gives(rows: list[tuple]) -> None:
    values = [_plain(*row) for row in rows]
    fast = record_decoding._plain_json_columns(values)
    assert fast is not None
    one_by_one = record_decoding._columns([record_decoding._plain_json(v) for v in values])
    assert _columns(fast) == _columns(one_by_one)
    assert _columns(fast) == [(a, b, float(c), float(d), None) for a, b, c, d in rows]


@pytest.mark.parametrize(
    "value",
    [
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 9007199254740993, "result": 1}',
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 18446744073709551617}',
        b'{"thing": "R1", "thing": "R2", "quantity": "q", "phenomenonTime": 5, "result": 1}',
        b'{"result": 1e-7, "more": [1, {"a": null}], "phenomenonTime": 5E3, "quantity": "q", '
        b'"thing": "R\\u00e9"}',
        b' {"thing": "R1", "quantity": "q", "phenomenonTime": -0.0, "result": -0} \n',
        b'{"thing": "\\ud83d\\ude00", "quantity": "q", "phenomenonTime": 5, "result": 0.1e1}',
        '{"thing": "Zürich", "quantity": "q", "phenomenonTime": 5, "result": 2}'.encode(),
    ],
)
def test_the_fast_path_reads_odd_good_records_as_each_value_alone_reads_them(value: bytes) -> None:
    # integers past 2**53 and 2**64, a repeated field (the last counts), fields in another
    # order with more of them, escapes, white space, exponents
    fast = record_decoding._plain_json_columns([value])
    assert fast is not None
    alone = record_decoding._columns([record_decoding._plain_json(value)])
    assert _columns(fast) == _columns(alone)
    assert np.signbit(fast["t"]).tolist() == np.signbit(alone["t"]).tolist()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "empty message"),
        (b"{not json", "bad JSON: Expecting property name enclosed in double quotes"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5}', "missing result"),
        (_plain("", "q", 5, 1), "thing and quantity must be non-empty strings"),
        (_plain(7, "q", 5, 1), "thing and quantity must be non-empty strings"),
        (_plain("R1", "q", True, 1), "phenomenonTime is not a number: True"),
        (_plain("R1", "q", "5", 1), "phenomenonTime is not a number: '5'"),
        (
            b'{"thing": "R1", "quantity": "q", "phenomenonTime": Infinity, "result": 1}',
            "phenomenonTime is not a number: inf",
        ),
        (_plain("R1", "q", 5, "1.5"), "result of q is not a number: '1.5'"),
        (_plain("R1", "q", 5, False), "result of q is not a number: False"),
    ],
)
def test_a_bad_value_among_good_ones_gets_its_reason(value: bytes | None, reason: str) -> None:
    values = [_plain("R1", "q", 1, 2.5), value, _plain("R1", "q", 3, -1)]
    decoded = decode_values(values, "none")
    assert decoded["reason"][1].startswith(reason)
    assert decoded["thing"][1] is None and np.isnan(decoded["t"][1])
    assert _columns(decoded)[::2] == [("R1", "q", 1.0, 2.5, None), ("R1", "q", 3.0, -1.0, None)]


def test_a_not_a_number_result_is_a_record_for_the_processors_to_judge() -> None:
    value = b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": NaN}'
    decoded = decode_values([value], "none")
    assert decoded["reason"][0] is None and np.isnan(decoded["v"][0])


@pytest.mark.parametrize("envelope", ["json", "protobuf"])
def test_the_envelopes_decode_to_the_record_they_wrap(envelope: str) -> None:
    codec = codec_for(envelope)
    wrapped = [
        MachineRecord("R0815", "actSpeed_C11", 1554096380468, 1.5),
        MachineRecord("R.2", "vaTorque_C11", 1554096380500, -3.0),
    ]
    values = [codec.encode(record, ingestion_ms=1) for record in wrapped]
    decoded = decode_values([*values, b"\x00\xff garbage"], envelope)
    assert _columns(decoded)[:2] == [
        ("R0815", "actSpeed_C11", 1554096380468.0, 1.5, None),
        ("R.2", "vaTorque_C11", 1554096380500.0, -3.0, None),
    ]
    assert decoded["reason"][2] is not None


def test_the_json_envelope_takes_the_event_time_as_protobuf_writes_int64() -> None:
    value = b'{"eventTimeMs": "1554096380468", "machineRecord": {"thing": "R1", "quantity": "q",'
    value += b' "result": 2}}'
    assert _columns(decode_values([value], "json")) == [("R1", "q", 1554096380468.0, 2.0, None)]
    no_record = decode_values([b'{"eventTimeMs": 5}'], "json")
    assert no_record["reason"][0] == "not an Event with a machineRecord"


def test_rows_are_split_into_records_and_rejects_keeping_their_kafka_position() -> None:
    rows = pd.DataFrame(
        {
            "key": ["R1.q", None, "R9.q", "R1.q"],
            "value": [
                _plain("R1", "q", 1, 2),
                _plain("R1", "q", 2, 3),
                _plain("R1", "q", 3, 4),
                b"oops",
            ],
            "partition": [0, 1, 2, 0],
            "offset": [10, 11, 12, 13],
        }
    )
    records, rejects = decode_rows(rows, "none")
    assert records[["thing", "t", "partition", "offset"]].values.tolist() == [["R1", 1.0, 0, 10]]
    assert records["value"].tolist() == [rows["value"][0]]
    assert rejects[["partition", "offset"]].values.tolist() == [[1, 11], [2, 12], [0, 13]]
    assert rejects["reason"].tolist()[:2] == [
        "no key: a record's key is its thing.quantity, here R1.q",
        "key 'R9.q' is not the record's thing.quantity R1.q",
    ]
    assert rejects["raw"].tolist() == [rows["value"][1], rows["value"][2], b"oops"]


def test_an_unknown_envelope_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown envelope 'xml'"):
        decode_values([b"<a/>"], "xml")
