"""Statestream's Kafka records as InfluxDB points: one measurement per kind of stream.

- `machine_data`: tags thing, quantity; field result; time phenomenonTime.
- `machine_out`: tags thing, quantity; fields result, left_result, right_result, left_time,
  right_time; time phenomenonTime.
- `machine_stats`: tags thing, component, kind (and level for levels); field seconds (levels) or
  duty_cycle (duty_cycle), and window_end; time window_start.
- `machine_alerts`: tags thing, component; fields duty_cycle, limit, window_end; time window_start.
- `vehicle_cells`: tags cell, resolution; fields vehicles, positions, mean_speed and mean_delay
  (left out when null), final (1.0 or 0.0), window_end; time window_start.

A query may declare the points of its own output topic (`PointShape`, in its `QueryDef`): tags
and fields named by the record's keys, the time by one of its epoch-ms keys; a null field is
left out (`machine_quantities`: tags quantity, thing; fields count, last, max, mean, min,
window_end; time window_start).

A levels record becomes one point per level (tag `level`, e.g. `80-100`). Times are epoch ms;
a pair's time may be a fraction of a millisecond (the middle of its two records), which is kept.
Every field is a float. A point is identified by its series (measurement and tags) and time, so
writing the same record again overwrites its point: replays double nothing.

    >>> builder = PointBuilder()
    >>> [point] = builder.points("machine_data",
    ...     '{"thing": "R0815", "quantity": "vaTorque_C11", "phenomenonTime": 1554096380468,'
    ...     ' "result": -4.44}')
    >>> point.line("ms")
    'machine_data,quantity=vaTorque_C11,thing=R0815 result=-4.44 1554096380468'

A record that cannot be a point raises `BadRecord` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import orjson

MEASUREMENTS = ("machine_data", "machine_out", "machine_stats", "machine_alerts", "vehicle_cells")
Precision = Literal["ms", "u"]

_MAX_ABS_TIME_MS = 9.2e15  # InfluxDB keeps int64 nanoseconds: ±9.22e18 ns
_TAG_SPECIAL = re.compile(r"[,= \\\n\r]")
_SERIES_CACHE_LIMIT = 100_000


@dataclass(frozen=True)
class PointShape:
    """The point of each record of a query's output topic: `topic` (a field of the topic
    settings), `measurement`, the record's keys that are its `tags` and `fields`, in key order,
    and the key that holds its time (epoch ms)."""

    topic: str
    measurement: str
    tags: tuple[str, ...]
    fields: tuple[str, ...]
    time: str


class BadRecord(ValueError):
    """A record that cannot become InfluxDB points; the message is the reason."""


@dataclass(frozen=True, slots=True)
class Point:
    """One InfluxDB point: its series (measurement and tags, escaped), fields and time in ms.

    `time_ms` is an int unless the time has a fraction of a millisecond.
    """

    series: str
    fields: str
    time_ms: int | float

    @property
    def key(self) -> tuple[str, int | float]:
        """What identifies the point in InfluxDB: a second point with this key overwrites it."""
        return (self.series, self.time_ms)

    def line(self, precision: Precision) -> str:
        """The point in line protocol with its time in ms or µs."""
        time = self.time_ms if precision == "ms" else round(self.time_ms * 1000)
        return f"{self.series} {self.fields} {time}"


def precision_for(points: Sequence[Point]) -> Precision:
    """ "ms" when every time is a whole millisecond, else "u" (µs) so that no fraction is lost."""
    return "u" if any(type(p.time_ms) is float for p in points) else "ms"


def lines_body(points: Sequence[Point]) -> tuple[bytes, Precision]:
    """The body of one /write request and the precision its times are in."""
    precision = precision_for(points)
    return "\n".join(p.line(precision) for p in points).encode(), precision


class PointBuilder:
    """Turns record values (JSON text) into points; keeps the escaped series it has built."""

    def __init__(self, shapes: Sequence[PointShape] = ()) -> None:
        self._series: dict[tuple[str, ...], str] = {}
        self._builders: dict[str, Callable[[dict[str, Any]], list[Point]]] = {
            "machine_data": self._machine_data,
            "machine_out": self._machine_out,
            "machine_stats": self._machine_stats,
            "machine_alerts": self._machine_alerts,
            "vehicle_cells": self._vehicle_cells,
        }
        for shape in shapes:
            self._builders[shape.measurement] = partial(self._declared, shape)

    def points(self, measurement: str, value: str | bytes | None) -> list[Point]:
        """The points of one record of the stream `measurement`; raises `BadRecord`."""
        if value is None:
            raise BadRecord("empty message")
        try:
            # orjson, faster than json.loads: parsing is most of a point's cost
            record = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise BadRecord(f"bad JSON: {exc}") from None
        if not isinstance(record, dict):
            raise BadRecord("not a JSON object")
        return self._builders[measurement](record)

    def _machine_data(self, r: dict[str, Any]) -> list[Point]:
        series = self._series_of(
            "machine_data", quantity=_tag(r, "quantity"), thing=_tag(r, "thing")
        )
        return [Point(series, f"result={_number(r, 'result')}", _time(r, "phenomenonTime"))]

    def _machine_out(self, r: dict[str, Any]) -> list[Point]:
        series = self._series_of(
            "machine_out", quantity=_tag(r, "quantity"), thing=_tag(r, "thing")
        )
        left, right = _object(r, "left"), _object(r, "right")
        fields = (
            f"left_result={_number(left, 'result', 'left.')},"
            f"left_time={_number(left, 'phenomenonTime', 'left.')},"
            f"result={_number(r, 'result')},"
            f"right_result={_number(right, 'result', 'right.')},"
            f"right_time={_number(right, 'phenomenonTime', 'right.')}"
        )
        return [Point(series, fields, _time(r, "phenomenonTime"))]

    def _machine_stats(self, r: dict[str, Any]) -> list[Point]:
        kind, thing, component = r.get("kind"), _tag(r, "thing"), _tag(r, "component")
        time, window_end = _time(r, "window_start"), _number(r, "window_end")
        if kind == "duty_cycle":
            series = self._series_of(
                "machine_stats", component=component, kind="duty_cycle", thing=thing
            )
            fields = f"duty_cycle={_number(r, 'duty_cycle')},window_end={window_end}"
            return [Point(series, fields, time)]
        if kind != "levels":
            raise BadRecord(f"kind is {kind!r}, not 'levels' or 'duty_cycle'")
        levels = _object(r, "level_seconds")
        if not levels:
            raise BadRecord("level_seconds is empty")
        points = []
        for level in levels:
            series = self._series_of(
                "machine_stats",
                component=component,
                kind="levels",
                level=_tag(levels, level, f"level_seconds key {level!r}"),
                thing=thing,
            )
            seconds = _number(levels, level, "level_seconds.")
            points.append(Point(series, f"seconds={seconds},window_end={window_end}", time))
        return points

    def _machine_alerts(self, r: dict[str, Any]) -> list[Point]:
        series = self._series_of(
            "machine_alerts", component=_tag(r, "component"), thing=_tag(r, "thing")
        )
        fields = (
            f"duty_cycle={_number(r, 'duty_cycle')},limit={_number(r, 'limit')},"
            f"window_end={_number(r, 'window_end')}"
        )
        return [Point(series, fields, _time(r, "window_start"))]

    def _vehicle_cells(self, r: dict[str, Any]) -> list[Point]:
        resolution = r.get("resolution")
        if type(resolution) is not int:
            raise BadRecord("resolution is missing or not an integer")
        series = self._series_of("vehicle_cells", cell=_tag(r, "cell"), resolution=str(resolution))
        final = r.get("final")
        if type(final) is not bool:
            raise BadRecord("final is missing or not true or false")
        means = [
            f"{name}={_number(r, name)}"
            for name in ("mean_delay", "mean_speed")
            if r.get(name) is not None
        ]
        fields = ",".join(
            [
                f"final={float(final)!r}",
                *means,
                f"positions={_number(r, 'positions')}",
                f"vehicles={_number(r, 'vehicles')}",
                f"window_end={_number(r, 'window_end')}",
            ]
        )
        return [Point(series, fields, _time(r, "window_start"))]

    def _declared(self, shape: PointShape, r: dict[str, Any]) -> list[Point]:
        series = self._series_of(shape.measurement, **{tag: _tag(r, tag) for tag in shape.tags})
        fields = ",".join(
            f"{name}={_number(r, name)}" for name in shape.fields if r.get(name) is not None
        )
        if not fields:
            raise BadRecord(f"none of the fields {', '.join(shape.fields)} has a value")
        return [Point(series, fields, _time(r, shape.time))]

    def _series_of(self, measurement: str, **tags: str) -> str:
        """`measurement,tag=value,…`; tags are passed in key order (InfluxDB's own order)."""
        cache_key = (measurement, *tags.values())
        series = self._series.get(cache_key)
        if series is None:
            if len(self._series) >= _SERIES_CACHE_LIMIT:
                self._series.clear()
            series = ",".join([measurement, *(f"{k}={_escape(v)}" for k, v in tags.items())])
            self._series[cache_key] = series
        return series


def _tag(record: dict[str, Any], name: str, what: str | None = None) -> str:
    """A tag value: the record's non-empty string `name` (a level's name is the key itself)."""
    value = name if what else record.get(name)
    if not isinstance(value, str) or not value:
        raise BadRecord(f"{what or name} is missing or not a non-empty string")
    return value


def _escape(value: str) -> str:
    """A tag value in line protocol: `,`, `=` and space escaped; what 1.x cannot carry refused."""
    if not _TAG_SPECIAL.search(value):
        return value
    if "\n" in value or "\r" in value or value.endswith("\\"):
        raise BadRecord(f"tag value {value!r} has a line break or ends in a backslash")
    return value.replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")


def _number(record: dict[str, Any], name: str, where: str = "") -> str:
    """A JSON number as a line-protocol float field (the parser refuses NaN and infinities)."""
    value = record.get(name)
    if type(value) is not int and type(value) is not float:  # bool is not a number here
        raise BadRecord(f"{where}{name} is missing or not a number")
    return repr(float(value))


def _time(record: dict[str, Any], name: str) -> int | float:
    """A time in epoch ms: an int for whole milliseconds, else the float."""
    value = record.get(name)
    if type(value) is not int and type(value) is not float:
        raise BadRecord(f"{name} is missing or not a number")
    if abs(value) > _MAX_ABS_TIME_MS:
        raise BadRecord(f"{name} {value!r} is not a time InfluxDB can keep (epoch ms)")
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _object(record: dict[str, Any], name: str) -> dict[str, Any]:
    value = record.get(name)
    if not isinstance(value, dict):
        raise BadRecord(f"{name} is missing or not an object")
    return value
