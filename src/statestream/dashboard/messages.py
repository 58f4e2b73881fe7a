"""What the dashboard shows, shaped from Kafka records and InfluxDB rows (pure: no I/O).

Series points (speed, torque, power) are put on charts; window results (power levels, duty cycle,
alerts) are put through the display policy of `policy.py`. The charts come from the join specs of
the settings: each spec gives three charts per thing, its left, right and result quantity (by
default actSpeed, vaTorque and vaPower of every component C).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from statestream.config import JoinSpecSettings

LEVELS = ("0-20", "20-40", "40-60", "60-80", "80-100")
LEVELS_KIND, DUTY_CYCLE_KIND, ALERT_KIND = "levels", "duty_cycle", "alert"
DEFAULT_DUTY_CYCLE_LIMIT = 0.4


@dataclass(frozen=True)
class ChartSpec:
    """One chart of a thing: the quantities of one side of a join spec, one line per component."""

    chart_id: str
    title: str
    pattern: re.Pattern[str]

    def component_of(self, quantity: str) -> str | None:
        match = self.pattern.fullmatch(quantity)
        return match.group(1) if match else None


def charts_of(specs: Sequence[JoinSpecSettings]) -> list[ChartSpec]:
    """The charts of every thing: left, right and result quantity of each join spec.

    >>> [c.title for c in charts_of([JoinSpecSettings()])]
    ['actSpeed', 'vaTorque', 'vaPower']
    """
    charts: list[ChartSpec] = []
    for index, spec in enumerate(specs):
        for side, template in (("left", spec.left), ("right", spec.right), ("result", spec.result)):
            title = template.replace("_{c}", "").replace("{c}", "") or template
            before, _, after = template.partition("{c}")
            pattern = re.compile(re.escape(before) + "(.+)" + re.escape(after))
            charts.append(ChartSpec(f"{index}.{side}", title, pattern))
    return charts


@dataclass(frozen=True)
class SeriesPoint:
    """One value of a charted quantity of a thing, at its event time (epoch ms)."""

    thing: str
    chart_id: str
    quantity: str
    component: str
    time: float
    value: float


@dataclass(frozen=True)
class WindowResult:
    """A window result of the statistics (levels, duty cycle) or an alert, as displayed.

    `values`: level → seconds for levels; {"duty_cycle"} for duty cycle; {"duty_cycle", "limit"}
    for an alert. Its event time is its window.
    """

    thing: str
    component: str
    kind: str
    window_start: int
    window_end: int
    values: Mapping[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What a newer result replaces: one result per thing, component and kind."""
        return f"{self.thing}.{self.component}.{self.kind}"

    @property
    def event_time(self) -> tuple[int, int]:
        return (self.window_start, self.window_end)

    def as_message(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "thing": self.thing,
            "component": self.component,
            "kind": self.kind,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "values": dict(self.values),
        }


class UnreadableRecord(ValueError):
    """A topic value the dashboard cannot read (not JSON, or fields missing); it is counted."""


class RecordShaper:
    """Turns the values of the dashboard's Kafka topics into points and window results.

    A value that cannot be read raises `UnreadableRecord`; the feed counts it and goes on.
    """

    def __init__(self, specs: Sequence[JoinSpecSettings]) -> None:
        self.charts = charts_of(specs)
        self._chart_of: dict[str, ChartSpec | None] = {}

    def chart_of(self, quantity: str) -> ChartSpec | None:
        """The chart a quantity is drawn on, or None (remembered: quantities are few)."""
        if quantity not in self._chart_of:
            if len(self._chart_of) > 10_000:
                self._chart_of.clear()
            found = (c for c in self.charts if c.component_of(quantity) is not None)
            self._chart_of[quantity] = next(found, None)
        return self._chart_of[quantity]

    def is_charted_key(self, key: bytes | None) -> bool:
        """Whether a record keyed `thing.quantity` may be charted: True unless its key names a
        quantity no chart shows (a cheap test that spares parsing the record)."""
        if not key:
            return True
        quantity = key.rpartition(b".")[2].decode("utf-8", "replace")
        return self.chart_of(quantity) is not None

    def point(self, raw: bytes | str | None) -> SeriesPoint | None:
        """A machine.data record or a machine.out pair as a chart point; None if not charted."""
        return self.point_of(json_object(raw))

    def point_of(self, record: dict[str, Any]) -> SeriesPoint | None:
        """`point` of a record already read from its JSON."""
        thing, quantity = record.get("thing"), record.get("quantity")
        time, value = _number(record.get("phenomenonTime")), _number(record.get("result"))
        if not isinstance(thing, str) or not isinstance(quantity, str) or time is None:
            raise UnreadableRecord("thing, quantity or phenomenonTime missing")
        chart = self.chart_of(quantity)
        if chart is None:
            return None
        if value is None:
            raise UnreadableRecord(f"{quantity} without a numeric result")
        return self.series_point(thing, chart, quantity, time, value)

    @staticmethod
    def series_point(
        thing: str, chart: ChartSpec, quantity: str, time: float, value: float
    ) -> SeriesPoint:
        component = chart.component_of(quantity) or ""
        return SeriesPoint(thing, chart.chart_id, quantity, component, time, value)

    def window_result(self, raw: bytes | str | None) -> WindowResult:
        """An analytics.machine.stats record (levels or duty cycle) as a window result."""
        record = json_object(raw)
        kind = record.get("kind")
        if kind == LEVELS_KIND:
            seconds = record.get("level_seconds")
            if not isinstance(seconds, dict):
                raise UnreadableRecord("levels without level_seconds")
            values = {level: _number(seconds.get(level)) or 0.0 for level in LEVELS}
        elif kind == DUTY_CYCLE_KIND:
            duty_cycle = _number(record.get("duty_cycle"))
            if duty_cycle is None:
                raise UnreadableRecord("duty_cycle without a number")
            values = {"duty_cycle": duty_cycle}
        else:
            raise UnreadableRecord(f"unknown kind {kind!r}")
        return _window(record, kind, values)

    def alert(self, raw: bytes | str | None) -> WindowResult:
        """An analytics.machine.alerts record as a window result of kind `alert`."""
        record = json_object(raw)
        duty_cycle, limit = _number(record.get("duty_cycle")), _number(record.get("limit"))
        if duty_cycle is None:
            raise UnreadableRecord("alert without a duty_cycle")
        values = {
            "duty_cycle": duty_cycle,
            "limit": DEFAULT_DUTY_CYCLE_LIMIT if limit is None else limit,
        }
        return _window(record, ALERT_KIND, values)


def _window(record: dict[str, Any], kind: str, values: dict[str, float]) -> WindowResult:
    thing, component = record.get("thing"), record.get("component")
    start, end = _number(record.get("window_start")), _number(record.get("window_end"))
    if not isinstance(thing, str) or not isinstance(component, str) or start is None or end is None:
        raise UnreadableRecord("thing, component, window_start or window_end missing")
    return WindowResult(thing, component, kind, int(start), int(end), values)


def json_object(raw: bytes | str | None) -> dict[str, Any]:
    """A topic value as a JSON object; raises `UnreadableRecord` if it is none."""
    try:
        value = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        raise UnreadableRecord("not JSON") from None
    if not isinstance(value, dict):
        raise UnreadableRecord("not a JSON object")
    return value


_json_object = json_object  # the name vehicles.py imports


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def series_messages(points: Iterable[SeriesPoint], per_series: int) -> list[dict[str, Any]]:
    """Points grouped into one message per series (thing, quantity), time-sorted, at most
    `per_series` each, evenly thinned (always keeping the newest), so that a fast stream cannot
    flood a browser.

    >>> pts = [SeriesPoint("R1", "0.left", "actSpeed_C11", "C11", t, t / 10) for t in (3, 1, 2)]
    >>> series_messages(pts, 2)[0]["t"]
    [1, 3]
    """
    grouped: dict[tuple[str, str, str, str], list[SeriesPoint]] = defaultdict(list)
    for point in points:
        grouped[(point.thing, point.chart_id, point.quantity, point.component)].append(point)
    messages = []
    for (thing, chart_id, quantity, component), series in grouped.items():
        series.sort(key=lambda p: p.time)
        kept = _thin(series, per_series)
        messages.append(
            {
                "thing": thing,
                "chart": chart_id,
                "quantity": quantity,
                "component": component,
                "t": [_compact(p.time) for p in kept],
                "v": [p.value for p in kept],
            }
        )
    return messages


def _thin(series: list[SeriesPoint], limit: int) -> list[SeriesPoint]:
    if len(series) <= limit:
        return series
    if limit == 1:
        return series[-1:]
    step = (len(series) - 1) / (limit - 1)
    return [series[round(i * step)] for i in range(limit)]


def _compact(time: float) -> float | int:
    return int(time) if time == int(time) else time


def thing_of_key(key: str) -> str:
    """The thing of a result key `thing.component.kind` (a thing's name may hold dots).

    >>> thing_of_key("R0815.v2.C11.duty_cycle")
    'R0815.v2'
    """
    return key.rsplit(".", 2)[0]


def message_for_thing(message: Mapping[str, Any], thing: str) -> dict[str, Any] | None:
    """The part of a machines-page update that concerns one thing (the page of one machine);
    None if nothing does and it carries no health."""
    mine = {
        "type": message.get("type", "update"),
        "series": [s for s in message.get("series") or [] if s["thing"] == thing],
        "results": [r for r in message.get("results") or [] if r["thing"] == thing],
        "expired": [k for k in message.get("expired") or [] if thing_of_key(k) == thing],
        "alerts": [a for a in message.get("alerts") or [] if a["thing"] == thing],
        "health": message.get("health"),
    }
    if not any(mine[part] for part in ("series", "results", "expired", "alerts", "health")):
        return None
    return mine
