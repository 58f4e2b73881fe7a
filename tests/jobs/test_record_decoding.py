"""Decoding a call's Kafka rows into records: the compiled path, the per-value path, the
envelopes, Kafka order, and the rejects with their reasons."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from statestream.ingest.base import MachineRecord
from statestream.ingest.envelope import codec_for
from statestream.jobs.record_decoding import _DECODERS, decode_rows

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


def _rows(keys: list, values: list, arrow: bool = True, partitions=None) -> pd.DataFrame:
    """Kafka rows as the grouped_rows patch gives them (binary columns in Arrow), or as Python
    objects (without the patch)."""
    count = len(values)

    def binary(column: list) -> pd.Series | list:
        encoded = [v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for v in column]
        if not arrow:
            return column
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(encoded, pa.binary())))

    return pd.DataFrame(
        {
            "bucket": np.zeros(count, dtype=np.int64),
            "key": binary(keys),
            "value": binary(values),
            "partition": np.zeros(count, dtype=np.int64) if partitions is None else partitions,
            "offset": np.arange(count, dtype=np.int64),
        }
    )


def _decoded(frames: list[pd.DataFrame], envelope: str = "none") -> tuple[list, pd.DataFrame]:
    records, rejects = decode_rows(frames, envelope)
    frame = records.frame()
    return list(
        zip(frame["thing"], frame["quantity"], frame["t"], frame["v"], strict=True)
    ), rejects


@given(records, st.booleans())
@example([("0", "0", 0, 0), ("0", "0\x00", 0, 0)], False)  # pandas' factorize: one name
def test_records_come_out_as_each_value_alone_gives_them(rows: list[tuple], arrow: bool) -> None:
    values = [_plain(*row) for row in rows]
    keys = [f"{a}.{b}" for a, b, _, _ in rows]
    decoded, rejects = _decoded([_rows(keys, values, arrow)])
    assert rejects.empty
    assert decoded == [_DECODERS["none"](value) for value in values]
    assert decoded == [(a, b, float(c), float(d)) for a, b, c, d in rows]


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
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": 0.1234567890123456789}',
    ],
)
def test_odd_good_records_are_read_as_each_value_alone_reads_them(value: bytes) -> None:
    # integers past 2**53 and 2**64, a repeated field (the last counts), fields in another
    # order with more of them, escapes, white space, exponents, more digits than a double
    alone = _DECODERS["none"](value)
    key = f"{alone[0]}.{alone[1]}"
    decoded, rejects = _decoded([_rows([key], [value])])
    assert rejects.empty
    assert decoded == [alone]
    assert np.signbit(decoded[0][2:]).tolist() == np.signbit(alone[2:]).tolist()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "empty message"),
        (b"{not json", "bad JSON: Expecting property name enclosed in double quotes"),
        (b"\xff{", "bad JSON: 'utf-8' codec can't decode byte 0xff"),
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
        (
            b'{"thing": "R1", "quantity": "q", "phenomenonTime": 1e400, "result": 1}',
            "phenomenonTime is not a number: inf",
        ),
        (_plain("R1", "q", 5, "1.5"), "result of q is not a number: '1.5'"),
        (_plain("R1", "q", 5, False), "result of q is not a number: False"),
    ],
)
def test_a_bad_value_among_good_ones_gets_its_reason(value: bytes | None, reason: str) -> None:
    values = [_plain("R1", "q", 1, 2.5), value, _plain("R1", "q", 3, -1)]
    decoded, rejects = _decoded([_rows(["R1.q"] * 3, values)])
    assert decoded == [("R1", "q", 1.0, 2.5), ("R1", "q", 3.0, -1.0)]
    assert rejects["offset"].tolist() == [1]
    assert rejects["reason"][0].startswith(reason)
    assert rejects["raw"][0] == value


def test_a_not_a_number_result_is_a_record_for_the_processors_to_judge() -> None:
    value = b'{"thing": "R1", "quantity": "q", "phenomenonTime": 5, "result": NaN}'
    records, rejects = decode_rows([_rows(["R1.q"], [value])], "none")
    assert rejects.empty and np.isnan(records.v[0])


@pytest.mark.parametrize("envelope", ["json", "protobuf"])
def test_the_envelopes_decode_to_the_record_they_wrap(envelope: str) -> None:
    codec = codec_for(envelope)
    wrapped = [
        MachineRecord("R0815", "actSpeed_C11", 1554096380468, 1.5),
        MachineRecord("R.2", "vaTorque_C11", 1554096380500, -3.0),
    ]
    values = [codec.encode(record, ingestion_ms=1) for record in wrapped]
    keys = [record.key for record in wrapped] + ["R1.q"]
    decoded, rejects = _decoded([_rows(keys, [*values, b"\x00\xff garbage"])], envelope)
    assert decoded == [
        ("R0815", "actSpeed_C11", 1554096380468.0, 1.5),
        ("R.2", "vaTorque_C11", 1554096380500.0, -3.0),
    ]
    assert rejects["offset"].tolist() == [2]


def test_the_json_envelope_takes_the_event_time_as_protobuf_writes_int64() -> None:
    value = b'{"eventTimeMs": "1554096380468", "machineRecord": {"thing": "R1", "quantity": "q",'
    value += b' "result": 2}}'
    decoded, _ = _decoded([_rows(["R1.q"], [value])], "json")
    assert decoded == [("R1", "q", 1554096380468.0, 2.0)]
    _, rejects = _decoded([_rows(["R1.q"], [b'{"eventTimeMs": 5}'])], "json")
    assert rejects["reason"].tolist() == ["not an Event with a machineRecord"]


def test_a_json_envelope_time_of_non_ascii_digits_is_a_reject_not_a_crash() -> None:
    value = '{"eventTimeMs": "\u00b2", "machineRecord": {"thing": "R1", "quantity": "q",'
    value += ' "result": 2}}'  # "²": str.isdigit says yes, int() refuses it
    decoded, rejects = _decoded([_rows(["R1.q"], [value.encode()])], "json")
    assert decoded == [] and len(rejects) == 1


@pytest.mark.parametrize("arrow", [True, False])
def test_rows_are_split_into_records_and_rejects_in_kafka_order(arrow: bool) -> None:
    keys = ["R1.q", None, "R9.q", "R1.q", "R1.q", "R2.q"]
    values = [_plain("R1", "q", t, t + 1) for t in range(3)] + [b"oops"]
    values += [_plain("R1", "q", 4, 5), _plain("R2", "q", 5, 6)]
    frame = _rows(keys, values, arrow, partitions=np.array([1, 1, 1, 1, 0, 1]))
    # the rows arrive in two frames, out of Kafka order
    records, rejects = decode_rows([frame.iloc[3:], frame.iloc[:3]], "none")
    assert records.frame()[["thing", "t", "partition", "offset"]].values.tolist() == [
        ["R1", 4.0, 0, 4],
        ["R1", 0.0, 1, 0],
        ["R2", 5.0, 1, 5],
    ]
    assert records.row(1) == {
        "thing": "R1",
        "quantity": "q",
        "t": 0.0,
        "v": 1.0,
        "value": values[0],
        "partition": 1,
        "offset": 0,
    }
    assert rejects[["partition", "offset"]].values.tolist() == [[1, 1], [1, 2], [1, 3]]
    assert rejects["reason"].tolist()[:2] == [
        "no key: a record's key is its thing.quantity, here R1.q",
        "key 'R9.q' is not the record's thing.quantity R1.q",
    ]
    assert rejects["raw"].tolist() == values[1:4]
    again = records.rejected(np.array([2, 0]), "why")
    assert again[["reason", "raw", "offset"]].values.tolist() == [
        ["why", values[5], 5],
        ["why", values[4], 4],
    ]


def test_things_are_coded_in_order_of_their_first_record() -> None:
    keys = ["B.x", "A.y", "B.y", "a.b.c", "a.b.c"]
    values = [_plain("B", "x", 1, 1), _plain("A", "y", 2, 1), _plain("B", "y", 3, 1)]
    values += [_plain("a.b", "c", 4, 1), _plain("a", "b.c", 5, 1)]  # one key, two records
    records, rejects = decode_rows([_rows(keys, values)], "none")
    assert rejects.empty
    assert records.things.names == ["B", "A", "a.b", "a"]
    assert records.things.codes.tolist() == [0, 1, 0, 2, 3]
    assert records.quantities.names == ["x", "y", "c", "b.c"]
    assert records.things.first_seen and records.quantities.first_seen


def test_a_key_that_is_no_text_is_named_as_it_came() -> None:
    _, rejects = _decoded([_rows([b"R\xff.q"], [_plain("R1", "q", 1, 1)])])
    assert rejects["reason"].tolist() == [
        "key 'R\\\\xff.q' is not the record's thing.quantity R1.q"
    ]


def test_an_unknown_envelope_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown envelope 'xml'"):
        decode_rows([_rows(["a.b"], [b"<a/>"])], "xml")
