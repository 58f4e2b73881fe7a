"""One recorded MQTT message per line, `<receive time> <topic> <payload>`: HSL's HFP dump format.

    2026-11-25T06:15:30.123456Z /hfp/v2/journey/ongoing/vp/bus/0018/00423/1065/1/Kamppi via …

- **The receive time** is the first token: UTC, ISO 8601 with microseconds and `Z`. Reading also
  takes another offset, fewer digits and no offset at all (UTC then).
- **Topic and payload** are the rest of the line. A topic may hold spaces (HSL's headsigns) and
  any UTF-8 but a line break, so the payload starts, by the first rule that applies:
  1. after the last space, when what follows it is `base64:` and standard base64: the payload
     is those bytes decoded;
  2. after the first space followed by `{` or `[` (a JSON object or array: HFP's payloads and
     machine rows);
  3. after the last space (a payload without spaces: a number, a word; or none at all).
- **The writer** writes a payload as it is when it is UTF-8 without a line break, does not start
  with `base64:` and reads back whole by these rules; any other payload (binary, several lines,
  text with spaces after a topic's …) as `base64:<data>`. So each line reads back to the exact
  topic and bytes received.

    >>> line = format_line(RecordedMessage(1795587330123456, "a b/ä", b'{"x": 1}'))
    >>> line
    b'2026-11-25T06:15:30.123456Z a b/\\xc3\\xa4 {"x": 1}\\n'
    >>> parse_line(line.rstrip(b"\\n"))
    RecordedMessage(received_us=1795587330123456, topic='a b/ä', payload=b'{"x": 1}')
    >>> format_line(RecordedMessage(1795587330123456, "t", b"\\x00\\xff"))
    b'2026-11-25T06:15:30.123456Z t base64:AP8=\\n'
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from statestream.errors import InputError

BASE64_MARK = b"base64:"
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_LINE_BREAKS = ("\n", "\r")


class RecordingFormatError(InputError):
    """A line that is no recorded message, or a message that no line can hold."""


class RecordedMessage(NamedTuple):
    """One message as the recorder received it: when (epoch µs), on which topic, what bytes."""

    received_us: int
    topic: str
    payload: bytes


def format_time(received_us: int) -> str:
    """Epoch µs as the line's receive time: `2026-11-25T06:15:30.123456Z`."""
    return (_EPOCH + received_us * _MICROSECOND).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> int:
    """A line's receive time in epoch µs; without an offset it is UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise RecordingFormatError(f"{text[:40]!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def format_line(message: RecordedMessage) -> bytes:
    """The line of `message`, with its line end; the payload as it is when it reads back whole,
    else base64. `RecordingFormatError` for a topic that is empty or holds a line break."""
    topic = message.topic
    if not topic or any(mark in topic for mark in _LINE_BREAKS):
        raise RecordingFormatError(f"the topic {topic[:80]!r} cannot be one line's topic")
    encoded_topic = topic.encode()
    head = f"{format_time(message.received_us)} ".encode() + encoded_topic + b" "
    payload = message.payload
    if _plain_text(payload) and _split(encoded_topic + b" " + payload) == (encoded_topic, payload):
        return head + payload + b"\n"
    return head + BASE64_MARK + base64.b64encode(payload) + b"\n"


def parse_line(line: bytes) -> RecordedMessage:
    """The message of one line (without its line end); `RecordingFormatError` if it is none."""
    time_end = line.find(b" ")
    if time_end <= 0:
        raise RecordingFormatError("no receive time and topic before the payload")
    received_us = parse_time(line[:time_end].decode("ascii", "replace"))
    topic, payload = _split(line[time_end + 1 :])
    if not topic:
        raise RecordingFormatError("no topic")
    try:
        return RecordedMessage(received_us, topic.decode(), payload)
    except UnicodeDecodeError:
        raise RecordingFormatError("the topic is not UTF-8") from None


def _split(rest: bytes) -> tuple[bytes, bytes]:
    """Topic and payload of the line after its receive time, by the module's three rules."""
    last_space = rest.rfind(b" ")
    if last_space < 0:
        raise RecordingFormatError("no space between the topic and the payload")
    token = rest[last_space + 1 :]
    if token.startswith(BASE64_MARK) and _BASE64.fullmatch(token, len(BASE64_MARK)):
        try:
            return rest[:last_space], base64.b64decode(token[len(BASE64_MARK) :], validate=True)
        except binascii.Error:
            pass  # not whole base64 after all: a payload of its own
    json_start = min((i for i in (rest.find(b" {"), rest.find(b" [")) if i >= 0), default=-1)
    cut = json_start if json_start >= 0 else last_space
    return rest[:cut], rest[cut + 1 :]


def _plain_text(payload: bytes) -> bool:
    """Whether a payload may stand in a line as it is: UTF-8, one line, no base64 mark."""
    if b"\n" in payload or b"\r" in payload or payload.startswith(BASE64_MARK):
        return False
    try:
        payload.decode()
    except UnicodeDecodeError:
        return False
    return True
