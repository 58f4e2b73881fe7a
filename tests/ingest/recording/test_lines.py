"""The line format `<receive time> <topic> <payload>`: every message reads back to the exact
topic and bytes, HSL's dump lines read as they are, and a line that is no message says why."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.ingest.recording.lines import (
    RecordedMessage,
    RecordingFormatError,
    format_line,
    format_time,
    parse_line,
    parse_time,
)

T = 1_795_587_330_123_456  # 2026-11-25T06:15:30.123456Z
HFP_TOPIC = (
    "/hfp/v2/journey/ongoing/vp/bus/0018/00423/1065/1/"
    "Kamppi via Töölö/08:15/1130446/3/60;24/19/74/11"
)
HFP_PAYLOAD = (
    b'{"VP":{"desi":"65","dir":"1","oper":6,"veh":423,"tst":"2026-11-25T06:15:30.123Z",'
    b'"tsi":1795587330,"spd":8.3,"hdg":120,"lat":60.171,"long":24.9414,"acc":0.2,"dl":-5,'
    b'"odo":1234,"drst":0,"oday":"2026-11-25","jrn":101,"line":65,"start":"08:15",'
    b'"loc":"GPS","stop":null,"route":"1065","occu":0}}'
)


def _round_trip(topic: str, payload: bytes) -> RecordedMessage:
    line = format_line(RecordedMessage(T, topic, payload))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return parse_line(line[:-1])


def test_an_hfp_message_is_written_as_hsl_writes_it() -> None:
    line = format_line(RecordedMessage(T, HFP_TOPIC, HFP_PAYLOAD))
    assert line == f"2026-11-25T06:15:30.123456Z {HFP_TOPIC} ".encode() + HFP_PAYLOAD + b"\n"
    assert parse_line(line[:-1]) == (T, HFP_TOPIC, HFP_PAYLOAD)


@pytest.mark.parametrize(
    ("topic", "payload", "plain"),
    [
        ("machine/states", b'{"Thing": "R0815", "Timestamp": 1554096380468}', True),
        ("a b/ä ö/€", b'[1, 2, "x y"]', True),
        ("sensors/t", b"21.5", True),
        ("home/living room/lamp", b"ON", True),
        ("t", b"", True),
        ("a topic/with spaces", b"", True),
        ("t", b"hello world", False),  # the last space would cut it
        ("t", b"trailing ", False),
        ("t", b" {leading space}", False),
        ("t", b"\x00\x01\xff\xfe binary", False),
        ("t", b"line one\nline two", False),
        ("t", b"carriage\rreturn", False),
        ("t", b"base64:AAAA", False),  # would read as base64 itself
        ("t", b"x base64:AAAA", False),
        ("topic {with} brace", b'{"a": 1}', False),  # the JSON rule would cut the topic
        ("topic [x]", b"[1]", False),
        ("t", "ünïcode text".encode(), False),
        ("t", "ünïcode".encode(), True),
    ],
)
def test_every_payload_reads_back_byte_for_byte(topic: str, payload: bytes, plain: bool) -> None:
    line = format_line(RecordedMessage(T, topic, payload))
    assert (b" base64:" not in line) == plain
    assert _round_trip(topic, payload) == (T, topic, payload)


@given(
    topic=st.text(min_size=1).filter(lambda t: "\n" not in t and "\r" not in t),
    payload=st.binary() | st.text().map(str.encode),
    received_us=st.integers(0, 4_102_444_800_000_000),  # up to 2100
)
def test_any_topic_and_payload_read_back(topic: str, payload: bytes, received_us: int) -> None:
    line = format_line(RecordedMessage(received_us, topic, payload))
    assert parse_line(line.removesuffix(b"\n")) == (received_us, topic, payload)


def test_a_topic_that_no_line_can_hold_is_refused() -> None:
    for topic in ("", "a\nb", "a\rb"):
        with pytest.raises(RecordingFormatError):
            format_line(RecordedMessage(T, topic, b"x"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-25T06:15:30.123456Z", T),
        ("2026-11-25T06:15:30.123456+00:00", T),
        ("2026-11-25T08:15:30.123456+02:00", T),
        ("2026-11-25T06:15:30.123456", T),  # no zone: UTC
        ("2026-11-25T06:15:30.123Z", T - 456),
        ("2026-11-25T06:15:30Z", T - 123_456),
    ],
)
def test_receive_times_in_other_iso_spellings_are_read(text: str, expected: int) -> None:
    assert parse_time(text) == expected
    assert parse_line(f"{text} t 1".encode()) == (expected, "t", b"1")


def test_the_receive_time_has_microseconds_and_z() -> None:
    assert format_time(T) == "2026-11-25T06:15:30.123456Z"
    assert format_time(0) == "1970-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"", "no receive time"),
        (b"2026-11-25T06:15:30Z", "no receive time"),
        (b"yesterday t 1", "is not an ISO 8601 time"),
        (b"2026-11-25T06:15:30Z topic-without-payload", "no space between"),
        (b"2026-11-25T06:15:30Z  1", "no topic"),
        (b"2026-11-25T06:15:30Z \xff\xfe 1", "not UTF-8"),
    ],
)
def test_a_line_that_is_no_message_says_why(line: bytes, why: str) -> None:
    with pytest.raises(RecordingFormatError, match=why):
        parse_line(line)
