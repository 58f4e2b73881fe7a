"""What a replay may change in a payload: its event times (`--shift-time`) and whose it is
(`--copies`). Pure functions of topic and payload.

Two kinds of payload are known, by their shape:

- **machine rows**: a JSON object with a `Thing` (text) and a `Timestamp` (epoch s, ms, µs or
  ns, `normalise_time_ms`'s rule);
- **HFP events** (`{"VP": {…}}`, `{"DOO": {…}}`, …): one member whose value is an object with
  `tst` (ISO 8601) or `tsi` (epoch s).

Any other payload passes unchanged, and so does every payload when nothing is to change: a
replay without adjustments sends the recorded bytes. An adjusted payload is written compact.

- **Time shift** by `shift_ms`: `Timestamp` in its own unit; `tst` with its own digits and zone;
  `tsi` by the whole seconds `tst` moved (by `shift_ms` without a `tst`); `oday` by the days
  `tst`'s date moved.
- **Copy** `c` (0 is the original): a machine's `Thing` `R0815` becomes `R0815-copy1`; an HFP
  vehicle's operator id gets `c × 10 000` added, in the topic (`…/bus/0018/00423/…` →
  `…/bus/10018/00423/…`: the topic's operator and vehicle are the vehicle, see `ingest.hfp`)
  and in the payload's `oper` alike; vehicle numbers stay, so copies are told apart by operator.

    >>> row = b'{"Thing": "R1", "Timestamp": 1554096380468, "vaLoad_C11": 1.5}'
    >>> adjusted("machine/states", row, shift_ms=1000, copy=2)
    ('machine/states', b'{"Thing":"R1-copy2","Timestamp":1554096381468,"vaLoad_C11":1.5}')
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

import orjson

from statestream.codecs.formats import MalformedRow, normalise_time_ms

COPY_OPERATOR_STEP = 10_000  # added to an HFP operator id per copy (HSL's ids have 4 digits)
_UNITS_PER_MS = {"ms": 1.0, "s": 1e-3, "us": 1e3, "ns": 1e6}
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?(Z|[+-]\d\d(?::?\d\d)?)?")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)
Kind = Literal["machine", "hfp"]


def adjusted(topic: str, payload: bytes, *, shift_ms: int = 0, copy: int = 0) -> tuple[str, bytes]:
    """`topic` and `payload` with event times moved by `shift_ms` and renamed as copy `copy`;
    unchanged when neither applies (or the payload is of no known kind)."""
    if not shift_ms and not copy:
        return topic, payload
    obj, kind = read_payload(payload)
    if kind is None:
        return topic, payload
    done = adjusted_object(topic, obj, kind, shift_ms=shift_ms, copy=copy)
    return done if done is not None else (topic, payload)


def read_payload(payload: bytes) -> tuple[dict[str, Any], Kind | None]:
    """The payload's JSON object and its kind (None: not one that can be adjusted)."""
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return {}, None
    if not isinstance(obj, dict):
        return {}, None
    if isinstance(obj.get("Thing"), str) and "Timestamp" in obj:
        return obj, "machine"
    if len(obj) == 1:
        [event] = obj.values()
        if isinstance(event, dict) and ("tst" in event or "tsi" in event):
            return obj, "hfp"
    return obj, None


def event_time_ms(obj: dict[str, Any], kind: Kind) -> int | None:
    """A payload's event time in epoch ms (`Timestamp`, or `tst`, else `tsi`); None if none."""
    if kind == "machine":
        try:
            return normalise_time_ms(obj["Timestamp"])[0]
        except MalformedRow:
            return None
    [event] = obj.values()
    tst = event.get("tst")
    if isinstance(tst, str) and _ISO.fullmatch(tst):
        return _epoch_ms(tst)
    tsi = event.get("tsi")
    return tsi * 1000 if type(tsi) is int else None


def adjusted_object(
    topic: str, obj: dict[str, Any], kind: Kind, *, shift_ms: int, copy: int
) -> tuple[str, bytes] | None:
    """`adjusted` for a payload already read (`read_payload`), `obj` itself left as it is;
    None when the adjusted object cannot be written as JSON (an integer beyond 64 bits)."""
    obj = dict(obj)
    if kind == "machine":
        if shift_ms:
            obj["Timestamp"] = _shifted_timestamp(obj["Timestamp"], shift_ms)
        if copy:
            obj["Thing"] = f"{obj['Thing']}-copy{copy}"
    else:
        [(name, event)] = obj.items()
        event = dict(event)
        if shift_ms:
            _shift_hfp(event, shift_ms)
        if copy:
            topic = _renamed_hfp_topic(topic, copy)
            if type(event.get("oper")) is int:
                event["oper"] += copy * COPY_OPERATOR_STEP
        obj[name] = event
    try:
        return topic, orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return None


def _shifted_timestamp(value: Any, shift_ms: int) -> Any:
    """A machine Timestamp moved by `shift_ms` in its own unit; as it was if it is no time."""
    try:
        _, unit = normalise_time_ms(value)
    except MalformedRow:
        return value
    moved = value + shift_ms * _UNITS_PER_MS[unit]
    return round(moved) if type(value) is int else moved


def _shift_hfp(event: dict[str, Any], shift_ms: int) -> None:
    """Move an HFP event's `tst`, `tsi` and `oday` by `shift_ms`, in place."""
    tst, tsi = event.get("tst"), event.get("tsi")
    moved = _shifted_iso(tst, shift_ms) if isinstance(tst, str) else None
    if moved is None:
        if type(tsi) is int:
            event["tsi"] = (tsi * 1000 + shift_ms) // 1000
        return
    assert isinstance(tst, str)
    event["tst"] = moved
    if type(tsi) is int:
        event["tsi"] = tsi + _epoch_ms(moved) // 1000 - _epoch_ms(tst) // 1000
    oday = event.get("oday")
    if isinstance(oday, str):
        try:
            day = date.fromisoformat(oday)
        except ValueError:
            return
        days = datetime.fromisoformat(moved).date() - datetime.fromisoformat(tst).date()
        event["oday"] = (day + days).isoformat()


def _epoch_ms(text: str) -> int:
    """An ISO 8601 time (UTC when it has no zone) in epoch ms."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


def _shifted_iso(text: str, shift_ms: int) -> str | None:
    """An ISO 8601 time moved by `shift_ms`, written with its own fraction digits and zone."""
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    fraction, zone = match.group(1) or "", match.group(2) or ""
    moved = datetime.fromisoformat(text) + timedelta(milliseconds=shift_ms)
    out = moved.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        out += "." + f"{moved.microsecond:06d}{'0' * len(fraction)}"[: len(fraction)]
    return out + zone


def _renamed_hfp_topic(topic: str, copy: int) -> str:
    """An HFP topic with its operator level (after /hfp/v2/…/mode/) as copy `copy`'s."""
    levels = topic.split("/")
    for index in range(len(levels) - 7):
        if levels[index : index + 2] == ["hfp", "v2"]:
            operator = levels[index + 6]
            if operator.isascii() and operator.isdigit():
                number = int(operator) + copy * COPY_OPERATOR_STEP
                levels[index + 6] = f"{number:0{len(operator)}d}"
                return "/".join(levels)
            break
    return topic


class ReplayAdjuster:
    """The adjustments of one replay: renamed as copy `copy`; with `shift_time` event times
    moved so that the first message's (the first with one) is `start_ms`; and each later pass
    of a loop moved on by its `pass_offset_ms`, so that no pass repeats another's event times.
    Counts the payloads it could not adjust.

        >>> adjust = ReplayAdjuster(shift_time=True, copy=0, start_ms=1554096390000)
        >>> adjust("machine/states", b'{"Thing": "R1", "Timestamp": 1554096380000}', 0)[1]
        b'{"Thing":"R1","Timestamp":1554096390000}'
    """

    def __init__(self, *, shift_time: bool, copy: int, start_ms: int) -> None:
        self.shift_time = shift_time
        self.copy = copy
        self.start_ms = start_ms
        self.unadjusted = 0  # payloads of no known kind, or that could not be written back
        self._shift_ms: int | None = None  # decided by the first message with an event time

    def __call__(self, topic: str, payload: bytes, pass_offset_ms: int) -> tuple[str, bytes]:
        if not self.shift_time and not self.copy and not pass_offset_ms:
            return topic, payload
        obj, kind = read_payload(payload)
        if kind is None:
            self.unadjusted += 1
            return topic, payload
        if self.shift_time and self._shift_ms is None:
            first = event_time_ms(obj, kind)
            if first is not None:
                self._shift_ms = self.start_ms - first
        shift = (self._shift_ms or 0) + pass_offset_ms
        done = adjusted_object(topic, obj, kind, shift_ms=shift, copy=self.copy)
        if done is None:
            self.unadjusted += 1
            return topic, payload
        return done
