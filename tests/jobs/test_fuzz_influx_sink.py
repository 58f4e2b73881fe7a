"""Fuzzing the InfluxDB sink's record → point conversion: every record of the six streams
becomes points or one dead letter with its reason; nothing raises, no point InfluxDB must refuse.

Which records become how many points, and which are refused for what, is decided here by
`expected_points`: the sink's contract (`statestream.sinks.line_protocol`'s docstring, strict
JSON) written out field by field, without the code under test.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import pandas as pd
from hypothesis import example, given
from hypothesis import strategies as st

from statestream.config import load_settings
from statestream.queries.sink_influx.job import (
    InfluxPartitionWriter,
    _dead_letter,
    declared_points,
    sink_streams,
)
from statestream.sinks.line_protocol import PointBuilder, precision_for
from tests.fuzz_inputs import FUZZ, check_dead_letter, hostile, json_depth

RECORD = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": 5000, "result": 1.5}
PAIR = {
    **RECORD,
    "quantity": "vaPower_C11",
    "left": {"phenomenonTime": 4000, "result": 2.0},
    "right": {"phenomenonTime": 6000, "result": 3.0},
}
DUTY = {
    "thing": "R1",
    "component": "C11",
    "kind": "duty_cycle",
    "window_start": 0,
    "window_end": 600000,
    "duty_cycle": 0.45,
}
LEVELS = {**DUTY, "kind": "levels", "level_seconds": {"0-20": 30, "80-100": 30.0}}
TEMPLATES = {
    "machine_data": [RECORD],
    "machine_out": [PAIR],
    "machine_stats": [DUTY, LEVELS],
    "machine_alerts": [{**DUTY, "limit": 0.4}],
    "vehicle_cells": [
        {
            "cell": "881126d339fffff",
            "resolution": 8,
            "window_start": 0,
            "window_end": 60000,
            "vehicles": 2,
            "positions": 9,
            "mean_speed": None,
            "mean_delay": -4.5,
            "final": True,
        }
    ],
}
QUANTITIES = {
    "thing": "R1",
    "quantity": "temperature",
    "window_start": 0,
    "window_end": 60000,
    "count": 3,
    "min": -1.5,
    "max": 4,
    "mean": 1.25,
    "last": None,
}
TEMPLATES["machine_quantities"] = [QUANTITIES]
QUANTITY_FIELDS = ("count", "last", "max", "mean", "min", "window_end")
SETTINGS = load_settings()
STREAMS = sink_streams(SETTINGS)  # topic → measurement
NOT_A_NUMBER = re.compile(r"=-?(nan|inf)\b")


@st.composite
def sink_rows(draw: st.DrawFn) -> tuple[list[str], list[bytes | None]]:
    """(topics, values): the sink's input rows, values as the bytes Spark reads from Kafka."""
    topics, values = [], []
    for _ in range(draw(st.integers(1, 10))):
        topic = draw(st.sampled_from(sorted(STREAMS)))
        template = draw(st.sampled_from(TEMPLATES[STREAMS[topic]]))
        value = draw(hostile(template) | st.none())
        topics.append(topic)
        values.append(value)
    return topics, values


class _NotJson(ValueError):
    pass


def _reject_constant(name: str) -> float:
    raise _NotJson(f"{name} is no JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotJson(f"{text} is beyond a double")
    return number


def _integer(text: str) -> int | float:
    """A JSON integer: kept within 64 bits, a double beyond (RFC 8259 §6 promises no more)."""
    number = int(text)
    return number if -(2**63) <= number < 2**64 else _finite_float(text)


MAX_DEPTH = 1024  # levels of nested arrays and objects a JSON reader must take (orjson's limit)


def _unicode(item: Any) -> bool:
    """Whether every string in `item` (keys too) is Unicode text: no lone surrogate escape."""
    stack = [item]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [*item, *item.values()]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def strict_json(value: bytes) -> tuple[bool, Any]:
    """(True, the value) if `value` is one JSON text (RFC 8259) in UTF-8 without a byte order
    mark, its numbers finite doubles, its strings Unicode and at most `MAX_DEPTH` levels deep;
    else (False, None)."""
    if value.startswith(b"\xef\xbb\xbf") or json_depth(value) > MAX_DEPTH:
        return False, None
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 2 * MAX_DEPTH)  # json.loads recurses once per level
    try:
        parsed = json.loads(
            value.decode("utf-8"),  # strict: no invalid byte, no encoded surrogate
            parse_constant=_reject_constant,  # NaN, Infinity
            parse_float=_finite_float,
            parse_int=_integer,
        )
    except ValueError:  # UnicodeDecodeError, JSONDecodeError and _NotJson are ValueErrors
        return False, None
    finally:
        sys.setrecursionlimit(limit)
    return (True, parsed) if _unicode(parsed) else (False, None)


MAX_TIME_MS = 9.2e15  # InfluxDB keeps int64 nanoseconds: ±9.22e18 ns


STREAM_FIELDS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    # stream → (its tags, its time, its numbers; "a.b": b in the object a), line_protocol's
    # docstring; what each stream adds is in `expected_points`
    "machine_data": (("thing", "quantity"), "phenomenonTime", ("result",)),
    "machine_out": (
        ("thing", "quantity"),
        "phenomenonTime",
        ("result", "left.result", "left.phenomenonTime", "right.result", "right.phenomenonTime"),
    ),
    "machine_stats": (("thing", "component"), "window_start", ("window_end",)),
    "machine_alerts": (
        ("thing", "component"),
        "window_start",
        ("window_end", "duty_cycle", "limit"),
    ),
    "vehicle_cells": (("cell",), "window_start", ("positions", "vehicles", "window_end")),
    "machine_quantities": (("thing", "quantity"), "window_start", ()),
}


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)  # true and false are no numbers


def _taggable(value: str) -> bool:
    """Line protocol (InfluxDB 1.x) escapes comma, equals and space in a tag value; it has no
    escape for a line break, and a trailing backslash would escape the separator after it."""
    return "\n" not in value and "\r" not in value and not value.endswith("\\")


def _problems(record: dict[str, Any], tags, time: str, numbers) -> set[str]:
    """The fields of `record` that fail: a tag a non-empty string line protocol can carry
    ("tag" when it cannot), the time a number of epoch ms InfluxDB can keep, each number one."""
    problems = set()
    for name in tags:
        value = record.get(name)
        if not isinstance(value, str) or not value:
            problems.add(name)
        elif not _taggable(value):
            problems.add("tag")
    if not _is_number(record.get(time)) or abs(record[time]) > MAX_TIME_MS:
        problems.add(time)
    for path in numbers:
        within, _, name = path.rpartition(".")
        holder = record.get(within) if within else record
        if not isinstance(holder, dict):
            problems.add(within)
        elif not _is_number(holder.get(name)):
            problems.add(path)
    return problems


def expected_points(measurement: str, value: bytes | None) -> int | set[str]:
    """How many points the record `value` of the stream `measurement` becomes, or the kinds of
    reason it may be refused with: "empty", "json" (no JSON object), "tag" or the fields it
    fails (`STREAM_FIELDS`; a stats record is of the kind duty_cycle, with that number, or
    levels, one point per level of its non-empty object level_seconds; a cells record has an
    integer resolution, a boolean final, and means that are numbers or null; a quantities
    record's `QUANTITY_FIELDS` are numbers or null, not all null)."""
    if value is None:
        return {"empty"}
    ok, record = strict_json(value)
    if not ok or not isinstance(record, dict):
        return {"json"}
    problems, points = _problems(record, *STREAM_FIELDS[measurement]), 1
    if measurement == "machine_stats":
        levels = record.get("level_seconds")
        if record.get("kind") == "duty_cycle":
            problems |= _problems(record, (), "window_start", ("duty_cycle",))
        elif record.get("kind") != "levels":
            problems.add("kind")
        elif not isinstance(levels, dict) or not levels:
            problems.add("level_seconds")
        else:
            points = len(levels)
            for level, seconds in levels.items():
                if not level or not _is_number(seconds):
                    problems.add("level_seconds")
                elif not _taggable(level):
                    problems.add("tag")
    if measurement == "vehicle_cells":
        if type(record.get("resolution")) is not int:
            problems.add("resolution")
        if type(record.get("final")) is not bool:
            problems.add("final")
        means = [name for name in ("mean_delay", "mean_speed") if record.get(name) is not None]
        problems |= _problems(record, (), "window_start", means)
    if measurement == "machine_quantities":
        present = [name for name in QUANTITY_FIELDS if record.get(name) is not None]
        problems |= _problems(record, (), "window_start", present)
        if not present:
            problems.add("none")
    return problems or points


def reason_kind(reason: str) -> str:
    """What a reason is about, from its first word: "empty", "json", "tag" or a field name."""
    first = reason.split(" ", 1)[0]
    if first in ("empty", "tag", "none"):
        return first
    if first in ("bad", "not"):  # bad JSON: …, not a JSON object
        return "json"
    return "level_seconds" if first.startswith("level_seconds") else first


TOPIC = {measurement: topic for topic, measurement in STREAMS.items()}
CELL = TEMPLATES["vehicle_cells"][0]
EDGES: list[tuple[str, dict | bytes | None, int | set[str]]] = [
    # (stream, record or raw value, how many points or the kinds of reason), written by hand
    ("machine_data", RECORD, 1),
    ("machine_data", None, {"empty"}),
    ("machine_data", {**RECORD, "result": True}, {"result"}),  # a boolean is no number
    ("machine_data", {**RECORD, "result": 2**64}, 1),  # a double then
    ("machine_data", json.dumps(RECORD).replace("1.5", "NaN").encode(), {"json"}),
    ("machine_data", b"\xef\xbb\xbf" + json.dumps(RECORD).encode(), {"json"}),
    ("machine_data", json.dumps({**RECORD, "thing": "R\ud800"}).encode(), {"json"}),
    ("machine_data", {**RECORD, "thing": "R 1,=x"}, 1),  # escaped
    ("machine_data", {**RECORD, "thing": "R1\\"}, {"tag"}),
    ("machine_data", {**RECORD, "quantity": "a\nb"}, {"tag"}),
    ("machine_data", {**RECORD, "thing": ""}, {"thing"}),
    ("machine_data", {**RECORD, "phenomenonTime": 9.3e15}, {"phenomenonTime"}),
    ("machine_data", b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, {"json"}),
    ("machine_data", b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH, set(RECORD)),
    ("machine_data", b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), {"json"}),
    ("machine_out", PAIR, 1),
    ("machine_out", {**PAIR, "left": 3}, {"left"}),
    ("machine_out", {**PAIR, "right": {"phenomenonTime": 1}}, {"right.result"}),
    ("machine_stats", {k: v for k, v in DUTY.items() if k != "kind"}, {"kind"}),
    ("machine_stats", {**LEVELS, "level_seconds": {"a": 1, "b": 2, "c": 3.5}}, 3),
    ("machine_stats", {**LEVELS, "level_seconds": {}}, {"level_seconds"}),
    ("machine_stats", {**LEVELS, "level_seconds": {"a\r": 1}}, {"tag"}),
    ("machine_stats", {**LEVELS, "level_seconds": {"a": None}}, {"level_seconds"}),
    ("machine_alerts", {**DUTY, "limit": None}, {"limit"}),
    ("vehicle_cells", CELL, 1),
    ("vehicle_cells", {**CELL, "resolution": 8.0}, {"resolution"}),
    ("vehicle_cells", {**CELL, "resolution": 2**64}, {"resolution"}),  # a double then
    ("vehicle_cells", {**CELL, "final": 1}, {"final"}),
    ("vehicle_cells", {**CELL, "mean_delay": None, "mean_speed": 3}, 1),
    ("vehicle_cells", {**CELL, "mean_speed": "fast"}, {"mean_speed"}),
    ("machine_quantities", QUANTITIES, 1),
    ("machine_quantities", {**QUANTITIES, "mean": "1"}, {"mean"}),
    ("machine_quantities", {**QUANTITIES, "quantity": ""}, {"quantity"}),
    ("machine_quantities", {**QUANTITIES, **dict.fromkeys(QUANTITY_FIELDS)}, {"none"}),
]


def _encoded(value: dict | bytes | None) -> bytes | None:
    return json.dumps(value).encode() if isinstance(value, dict) else value


def test_the_rule_decides_the_edges_as_written_by_hand() -> None:
    for measurement, value, want in EDGES:
        assert expected_points(measurement, _encoded(value)) == want, (measurement, value)


@FUZZ
@given(sink_rows())
@example(([TOPIC[m] for m, _, _ in EDGES], [_encoded(v) for _, v, _ in EDGES]))
def test_every_record_becomes_points_or_one_dead_letter(rows: tuple[list, list]) -> None:
    topics, values = rows
    points, origins, bad = InfluxPartitionWriter(SETTINGS, None)._points(topics, values)
    reasons = dict(bad)
    assert len(reasons) == len(bad)
    expected = [expected_points(STREAMS[topic], value) for topic, value in zip(*rows, strict=True)]
    for row, want in enumerate(expected):
        if isinstance(want, int):
            assert row not in reasons, (values[row], reasons.get(row))
            built = PointBuilder(declared_points()).points(STREAMS[topics[row]], values[row])
            assert len(built) == want, values[row]
        else:
            assert row in reasons, (values[row], want)
            assert reason_kind(reasons[row]) in want, (reasons[row], want)
    assert set(origins) <= {row for row, want in enumerate(expected) if isinstance(want, int)}
    precision = precision_for(points)
    for point in points:
        line = point.line(precision)
        assert "\n" not in line and not NOT_A_NUMBER.search(point.fields), line

    frame = pd.DataFrame(
        {"topic": topics, "partition": 0, "offset": range(len(values)), "value": values}
    )
    for row, reason in bad:
        letter = json.loads(_dead_letter(frame, row, reason))
        check_dead_letter(letter, "sink_influx")
        assert (letter["source_topic"], letter["offset"]) == (topics[row], row)
        assert letter["reason"] == reason
