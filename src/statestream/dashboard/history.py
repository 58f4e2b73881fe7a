"""Recent history from InfluxDB for a page that just opened (HTTP `/query`, InfluxQL).

The sink writes `machine_data`, `machine_out`, `machine_stats` and `machine_alerts` (tags thing,
quantity / component, kind, level; time in ms). "Recent" is the last N points of each charted
series, not the last N minutes, so that replayed old data (the sample is from 2019) shows too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import requests

from statestream.config import InfluxSettings
from statestream.dashboard.messages import (
    ALERT_KIND,
    DEFAULT_DUTY_CYCLE_LIMIT,
    DUTY_CYCLE_KIND,
    LEVELS,
    LEVELS_KIND,
    RecordShaper,
    SeriesPoint,
    WindowResult,
    series_messages,
)

ALERTS_IN_HISTORY = 20
DAY_STEP_S = 300
"""The page of one machine also gets today's series as 5-minute means (288 points a day)."""
DAY_POINTS = 86_400 // DAY_STEP_S
_DAY_MS = 86_400_000


@dataclass
class History:
    """What InfluxDB holds of the recent past, shaped like the live messages."""

    series: list[dict[str, Any]] = field(default_factory=list)
    results: list[WindowResult] = field(default_factory=list)
    alerts: list[WindowResult] = field(default_factory=list)
    error: str | None = None


def day_start_ms(now_ms: int) -> int:
    """The start (UTC midnight) of the day of `now_ms`, in epoch ms.

    >>> day_start_ms(1_795_000_000_000)
    1794960000000
    """
    return now_ms // _DAY_MS * _DAY_MS


def history_queries(
    shaper: RecordShaper, points: int, thing: str | None = None, since_ms: int | None = None
) -> list[str]:
    """The InfluxQL statements of one history load: series points, latest windows, alerts; of
    one machine only if `thing` is given (the page of one machine), then with its series since
    `since_ms` (today) as `DAY_STEP_S` means."""
    quantities = "|".join(c.pattern.pattern.replace("/", r"\/") for c in shaper.charts)
    of_thing = f' AND "thing" = {_string(thing)}' if thing is not None else ""
    where = f'WHERE "quantity" =~ /^(?:{quantities})$/{of_thing}'
    alerts_where = f'WHERE "thing" = {_string(thing)} ' if thing is not None else ""
    day = _day_statements(where, since_ms) if thing is not None and since_ms is not None else []
    return [
        f'SELECT "result" FROM "machine_data" {where} GROUP BY "thing", "quantity" '
        f"ORDER BY time DESC LIMIT {points}",
        f'SELECT "result" FROM "machine_out" {where} GROUP BY "thing", "quantity" '
        f"ORDER BY time DESC LIMIT {points}",
        f'SELECT "seconds", "window_end" FROM "machine_stats" '
        f'WHERE "kind" = \'{LEVELS_KIND}\'{of_thing} GROUP BY "thing", "component", "level" '
        "ORDER BY time DESC LIMIT 1",
        f'SELECT "duty_cycle", "window_end" FROM "machine_stats" '
        f'WHERE "kind" = \'{DUTY_CYCLE_KIND}\'{of_thing} GROUP BY "thing", "component" '
        "ORDER BY time DESC LIMIT 1",
        f'SELECT "duty_cycle", "limit", "window_end" FROM "machine_alerts" {alerts_where}'
        f'GROUP BY "thing", "component" ORDER BY time DESC LIMIT {ALERTS_IN_HISTORY}',
        *day,
    ]


def _day_statements(where: str, since_ms: int) -> list[str]:
    """The series of the day from `since_ms` as `DAY_STEP_S` means (statements 5 and 6)."""
    until_ms = since_ms + _DAY_MS
    return [
        f'SELECT mean("result") AS "result" FROM "{measurement}" {where} '
        f"AND time >= {since_ms}ms AND time < {until_ms}ms "
        f'GROUP BY time({DAY_STEP_S}s), "thing", "quantity" fill(none)'
        for measurement in ("machine_data", "machine_out")
    ]


def _string(value: str) -> str:
    r"""An InfluxQL string literal: quotes and backslashes escaped.

    >>> print(_string("R'1"))
    'R\'1'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def load_history(
    influx: InfluxSettings,
    shaper: RecordShaper,
    points: int,
    timeout_s: float = 10.0,
    thing: str | None = None,
    since_ms: int | None = None,
) -> History:
    """Query InfluxDB for the recent history (of one `thing`, or all; of one thing also its
    series since `since_ms`, see `history_queries`); an unreachable server or a missing database
    gives an empty history with the reason in `error` (the page then shows live data only)."""
    password = influx.password.get_secret_value() if influx.password else ""
    try:
        response = requests.get(
            f"{influx.url}/query",
            params={
                "db": influx.database,
                "epoch": "ms",
                "q": ";".join(history_queries(shaper, points, thing, since_ms)),
            },
            auth=(influx.username, password),
            timeout=timeout_s,
        )
        body = response.json()
    except (requests.RequestException, ValueError) as exc:
        return History(error=f"InfluxDB at {influx.url} does not answer ({type(exc).__name__})")
    if "error" in body or response.status_code != 200:
        reason = body.get("error", response.status_code)
        return History(error=f"InfluxDB refused the query: {reason}")
    return shape_history(body.get("results", []), shaper, points)


def shape_history(results: list[dict[str, Any]], shaper: RecordShaper, points: int) -> History:
    """InfluxDB's answer to `history_queries` as a `History` (one result per statement)."""
    by_statement = {r.get("statement_id"): r for r in results}
    errors = [r["error"] for r in results if "error" in r]
    series = [
        point for statement in (0, 1) for point in _points(by_statement.get(statement, {}), shaper)
    ]
    day = [point for s in (5, 6) for point in _points(by_statement.get(s, {}), shaper)]
    history = History(
        series=series_messages(_before_recent(day, series) + series, points + DAY_POINTS),
        results=_latest_levels(by_statement.get(2, {})) + _duty_cycles(by_statement.get(3, {})),
        alerts=_alerts(by_statement.get(4, {})),
        error=errors[0] if errors else None,
    )
    latest_alerts: dict[str, WindowResult] = {}
    for alert in history.alerts:
        if alert.key not in latest_alerts or alert.event_time > latest_alerts[alert.key].event_time:
            latest_alerts[alert.key] = alert
    history.results += list(latest_alerts.values())
    return history


def _before_recent(day: list[SeriesPoint], recent: list[SeriesPoint]) -> list[SeriesPoint]:
    """The day's means of each series from before its first recent point (those are exact)."""
    first: dict[tuple[str, str], float] = {}
    for point in recent:
        key = (point.thing, point.quantity)
        first[key] = min(first.get(key, point.time), point.time)
    return [p for p in day if p.time < first.get((p.thing, p.quantity), float("inf"))]


def _rows(result: dict[str, Any]) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """(tags, row) of every row of a statement's result, rows as column → value."""
    for serie in result.get("series", []):
        tags, columns = serie.get("tags", {}), serie["columns"]
        for values in serie["values"]:
            yield tags, dict(zip(columns, values, strict=True))


def _points(result: dict[str, Any], shaper: RecordShaper) -> Iterator[SeriesPoint]:
    for tags, row in _rows(result):
        chart = shaper.chart_of(tags.get("quantity", ""))
        if chart is not None and isinstance(row.get("result"), int | float):
            thing, quantity = tags["thing"], tags["quantity"]
            yield shaper.series_point(thing, chart, quantity, row["time"], row["result"])


def _latest_levels(result: dict[str, Any]) -> list[WindowResult]:
    """One levels result per thing and component: the levels of its newest window."""
    newest: dict[tuple[str, str], tuple[int, int]] = {}
    seconds: dict[tuple[str, str, int], dict[str, float]] = defaultdict(dict)
    for tags, row in _rows(result):
        key, start = (tags["thing"], tags["component"]), int(row["time"])
        end = int(row.get("window_end") or start)
        newest[key] = max(newest.get(key, (start, end)), (start, end))
        seconds[(*key, start)][tags.get("level", "")] = float(row.get("seconds") or 0.0)
    return [
        WindowResult(
            thing,
            component,
            LEVELS_KIND,
            start,
            end,
            {level: seconds[(thing, component, start)].get(level, 0.0) for level in LEVELS},
        )
        for (thing, component), (start, end) in sorted(newest.items())
    ]


def _duty_cycles(result: dict[str, Any]) -> list[WindowResult]:
    return [
        WindowResult(
            tags["thing"],
            tags["component"],
            DUTY_CYCLE_KIND,
            int(row["time"]),
            int(row.get("window_end") or row["time"]),
            {"duty_cycle": float(row["duty_cycle"])},
        )
        for tags, row in _rows(result)
        if isinstance(row.get("duty_cycle"), int | float)
    ]


def _alerts(result: dict[str, Any]) -> list[WindowResult]:
    alerts = [
        WindowResult(
            tags["thing"],
            tags["component"],
            ALERT_KIND,
            int(row["time"]),
            int(row.get("window_end") or row["time"]),
            {
                "duty_cycle": float(row["duty_cycle"]),
                "limit": float(row.get("limit") or DEFAULT_DUTY_CYCLE_LIMIT),
            },
        )
        for tags, row in _rows(result)
        if isinstance(row.get("duty_cycle"), int | float)
    ]
    return sorted(alerts, key=lambda a: a.event_time, reverse=True)[:ALERTS_IN_HISTORY]
