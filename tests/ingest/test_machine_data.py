"""The machine-data processor: one record per quantity, every bad message rejected with a reason."""

from __future__ import annotations

import base64
import json

import pytest

from statestream.ingest import EventRejected, MachineRecord, MachineRowProcessor, RawEvent
from statestream.ingest.pipeline import dead_letter_value

T = 1554096380468


def _process(payload: bytes | str) -> list[MachineRecord]:
    raw = payload.encode() if isinstance(payload, str) else payload
    return MachineRowProcessor().process(RawEvent(raw, "machine/states", 0))


def test_a_row_gives_one_record_per_quantity_in_key_order() -> None:
    row = {"Thing": "R0815", "Timestamp": T, "vaLoad_C11": 1.5, "aaAcc_C11": 2, "id": "c352"}
    records = _process(json.dumps(row))
    assert records == [
        MachineRecord("R0815", "vaLoad_C11", T, 1.5),
        MachineRecord("R0815", "aaAcc_C11", T, 2.0),
    ]
    assert [r.key for r in records] == ["R0815.vaLoad_C11", "R0815.aaAcc_C11"]
    assert _process(json.dumps({"Thing": "R1", "Timestamp": T})) == []  # no quantity: no record


@pytest.mark.parametrize(
    ("timestamp", "expected_ms"),
    [
        (T, T),  # ms
        (T / 1000, T),  # s, with a fraction
        (T // 1000, T - 468),  # whole s
        (T * 1000 + 123, T),  # µs
        (T * 1_000_000, T),  # ns
    ],
)
def test_timestamps_in_s_us_ns_are_normalised_to_ms(timestamp: float, expected_ms: int) -> None:
    [record] = _process(json.dumps({"Thing": "R1", "Timestamp": timestamp, "a": 1.0}))
    assert record.phenomenon_time_ms == expected_ms
    assert isinstance(record.phenomenon_time_ms, int)


@pytest.mark.parametrize(
    ("payload", "kind", "reason"),
    [
        ('{"Thing": "R1", "Timestamp": ', "bad_json", "bad JSON"),
        (b'{"Thing": "R\xff1", "Timestamp": 1}', "bad_json", "bad JSON"),
        ('{"Thing": "R1", "Timestamp": 1554096380468, "a": NaN}', "bad_json", "bad JSON"),
        ("[1, 2]", "not_a_row", "not a JSON object"),
        ('{"Timestamp": 1554096380468, "a": 1.0}', "missing_thing", "missing Thing"),
        ('{"Thing": "", "Timestamp": 1554096380468}', "missing_thing", "missing Thing"),
        ('{"Thing": "R1", "a": 1.0}', "missing_timestamp", "missing Timestamp"),
        ('{"Thing": "R1", "Timestamp": "soon", "a": 1}', "bad_timestamp", "not a number"),
        ('{"Thing": "R1", "Timestamp": 12, "a": 1.0}', "impossible_time", "cannot be a time"),
        ('{"Thing": "R1", "Timestamp": -1554096380468}', "impossible_time", "cannot be a time"),
        ('{"Thing": "R1", "Timestamp": 1e30, "a": 1.0}', "impossible_time", "cannot be a time"),
        ('{"Thing": "R1", "Timestamp": 1554096380468, "a": "high"}', "bad_value", "a is not"),
        ('{"Thing": "R1", "Timestamp": 1554096380468, "a": true}', "bad_value", "a is not"),
        ('{"Thing": "R1", "Timestamp": 1554096380468, "a": null}', "bad_value", "a is not"),
    ],
)
def test_bad_messages_are_rejected_with_kind_and_reason(
    payload: str | bytes, kind: str, reason: str
) -> None:
    with pytest.raises(EventRejected) as rejected:
        _process(payload)
    assert rejected.value.kind == kind
    assert reason in rejected.value.reason


def test_a_dead_letter_record_keeps_the_raw_payload_source_and_reason() -> None:
    event = RawEvent(b'{"Thing": 1}', "machine/states", 1700000000000)
    rejected = EventRejected("missing_thing", "missing Thing")
    value = json.loads(dead_letter_value(event, rejected, 100))
    assert value == {
        "stage": "ingest",
        "reason": "missing Thing",
        "source_topic": "machine/states",
        "partition": None,
        "offset": None,
        "ingested_at": 1700000000000,
        "raw": '{"Thing": 1}',
        "raw_encoding": "utf-8",
        "raw_bytes": 12,
        "truncated": False,
        "kind": "missing_thing",
    }
    binary = RawEvent(b"\xff\xfe" * 100, "machine/states", 0)
    value = json.loads(dead_letter_value(binary, EventRejected("oversize", "too big"), 50))
    assert value["raw_encoding"] == "base64" and value["truncated"] is True
    assert base64.b64decode(value["raw"]) == b"\xff\xfe" * 25
    assert value["raw_bytes"] == 200


def test_a_cut_payload_stays_text_when_the_cut_falls_inside_a_character() -> None:
    event = RawEvent(("ä" * 100).encode(), "machine/states", 0)  # two bytes per character
    value = json.loads(dead_letter_value(event, EventRejected("oversize", "too big"), 51))
    assert (value["raw"], value["raw_encoding"], value["truncated"]) == ("ä" * 25, "utf-8", True)
