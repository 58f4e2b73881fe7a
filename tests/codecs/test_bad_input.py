"""The one dead-letter and late record shape (`statestream.codecs.bad_input`)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.codecs.bad_input import (
    DEAD_LETTER_FIELDS,
    LATE_FIELDS,
    REASON_LIMIT_CHARS,
    dead_letter,
    late_record,
    raw_fields,
    to_json,
)
from tests.fuzz_inputs import FUZZ


@FUZZ
@given(st.binary(max_size=300) | st.text(max_size=100), st.integers(0, 200))
def test_the_raw_input_comes_back_from_its_dead_letter(raw: bytes | str, limit: int) -> None:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    record = json.loads(to_json(dead_letter("join", "bad", raw, source_topic="t", raw_limit=limit)))
    assert list(record) == list(DEAD_LETTER_FIELDS)
    kept = record["raw"].encode() if record["raw_encoding"] == "utf-8" else b""
    if record["raw_encoding"] == "base64":
        kept = base64.b64decode(record["raw"])
    assert data.startswith(kept) and len(kept) >= min(len(data), limit) - 3
    assert (record["raw_bytes"], record["truncated"]) == (len(data), len(data) > limit)


def test_valid_utf8_is_text_and_anything_else_base64() -> None:
    assert raw_fields("café ☃".encode())["raw"] == "café ☃"
    assert raw_fields(b"caf\xc3\xa9 \xff")["raw_encoding"] == "base64"
    nothing = {"raw": None, "raw_encoding": None, "raw_bytes": 0, "truncated": False}
    assert raw_fields(None) == nothing


def test_a_late_record_has_the_common_fields_then_the_record_then_the_stage_s() -> None:
    record = late_record(
        "stats",
        thing="R1",
        quantity="vaPower_C11",
        phenomenon_time=5.0,
        result=float("nan"),
        watermark=float("inf"),
        source_topic="machine.out",
        partition=1,
        offset=9,
        ingested_at=7,
        allowed_lateness_ms=60_000,
    )
    assert list(record) == [*LATE_FIELDS, "allowed_lateness_ms"]
    assert (record["reason"], record["result"], record["watermark"]) == ("late", None, None)
    assert json.loads(to_json(record))["phenomenonTime"] == 5.0


def test_a_reason_quoting_a_huge_value_is_cut() -> None:
    reason = dead_letter("join", "x is not a number: " + "9" * 10**6, b"", source_topic="t")[
        "reason"
    ]
    assert len(reason) == REASON_LIMIT_CHARS and reason.endswith("…")


@pytest.mark.parametrize(
    ("stage", "reason", "extra", "message"),
    [
        ("sink-influx", "bad", {}, "unknown stage"),
        ("join", "", {}, "needs a reason"),
        ("join", "bad", {"raw_bytes": 0}, "cannot replace"),
    ],
)
def test_mistakes_of_the_calling_code_raise(stage, reason, extra, message) -> None:
    with pytest.raises(ValueError, match=message):
        dead_letter(stage, reason, b"x", source_topic="t", **extra)
