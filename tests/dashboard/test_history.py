"""Shaping InfluxDB's answer into the page's history (no server: a recorded answer's shape)."""

from __future__ import annotations

import pytest

from statestream.config import InfluxSettings, JoinSpecSettings
from statestream.dashboard import RecordShaper, load_history
from statestream.dashboard.history import history_queries, shape_history

T0 = 1_554_096_380_000


@pytest.fixture
def shaper() -> RecordShaper:
    return RecordShaper([JoinSpecSettings()])


def serie(name: str, tags: dict, columns: list[str], values: list[list]) -> dict:
    return {"name": name, "tags": tags, "columns": ["time", *columns], "values": values}


def answer() -> list[dict]:
    speed = serie(
        "machine_data",
        {"thing": "R1", "quantity": "actSpeed_C11"},
        ["result"],
        [[T0 + 2000, 3.0], [T0 + 1000, 2.0], [T0, 1.0]],
    )  # newest first, as queried
    power = serie(
        "machine_out", {"thing": "R1", "quantity": "vaPower_C11"}, ["result"], [[T0 + 500, 9.0]]
    )
    levels = [
        serie(
            "machine_stats",
            {"thing": "R1", "component": "C11", "level": level},
            ["seconds", "window_end"],
            [[T0 + 60_000, seconds, T0 + 120_000]],
        )
        for level, seconds in (("0-20", 40.0), ("80-100", 20.0))
    ]
    stale_level = serie(
        "machine_stats",
        {"thing": "R1", "component": "C11", "level": "40-60"},
        ["seconds", "window_end"],
        [[T0, 60.0, T0 + 60_000]],
    )
    duty = serie(
        "machine_stats",
        {"thing": "R1", "component": "C11"},
        ["duty_cycle", "window_end"],
        [[T0, 0.45, T0 + 600_000]],
    )
    alerts = serie(
        "machine_alerts",
        {"thing": "R1", "component": "C11"},
        ["duty_cycle", "limit", "window_end"],
        [[T0 + 60_000, 0.5, 0.4, T0 + 660_000], [T0, 0.45, 0.4, T0 + 600_000]],
    )
    return [
        {"statement_id": 0, "series": [speed]},
        {"statement_id": 1, "series": [power]},
        {"statement_id": 2, "series": [*levels, stale_level]},
        {"statement_id": 3, "series": [duty]},
        {"statement_id": 4, "series": [alerts]},
    ]


def test_series_come_time_sorted_per_quantity(shaper: RecordShaper) -> None:
    history = shape_history(answer(), shaper, points=300)
    assert [(s["quantity"], s["t"], s["v"]) for s in history.series] == [
        ("actSpeed_C11", [T0, T0 + 1000, T0 + 2000], [1.0, 2.0, 3.0]),
        ("vaPower_C11", [T0 + 500], [9.0]),
    ]
    assert history.error is None


def test_levels_are_those_of_the_newest_window(shaper: RecordShaper) -> None:
    results = {r.key: r for r in shape_history(answer(), shaper, points=300).results}
    newest = results["R1.C11.levels"]
    assert (newest.window_start, newest.window_end) == (T0 + 60_000, T0 + 120_000)
    assert newest.values == {"0-20": 40.0, "20-40": 0.0, "40-60": 0.0, "60-80": 0.0, "80-100": 20.0}
    assert results["R1.C11.duty_cycle"].values == {"duty_cycle": 0.45}
    assert results["R1.C11.alert"].window_start == T0 + 60_000  # the newest alert is on display


def test_alerts_come_newest_first(shaper: RecordShaper) -> None:
    alerts = shape_history(answer(), shaper, points=300).alerts
    assert [a.window_start for a in alerts] == [T0 + 60_000, T0]


def test_a_statement_error_is_passed_on(shaper: RecordShaper) -> None:
    error = [{"statement_id": i, "error": "database not found: x"} for i in range(5)]
    history = shape_history(error, shaper, points=300)
    assert history.error == "database not found: x" and history.series == []


def test_queries_select_only_the_charted_quantities(shaper: RecordShaper) -> None:
    data = history_queries(shaper, points=50)[0]
    assert '"quantity" =~ /^(?:actSpeed_(.+)|vaTorque_(.+)|vaPower_(.+))$/' in data
    assert data.endswith("ORDER BY time DESC LIMIT 50")


def test_an_unreachable_influxdb_gives_an_empty_history_with_the_reason(
    shaper: RecordShaper,
) -> None:
    influx = InfluxSettings(url="http://127.0.0.1:9")  # discard port: nothing listens
    history = load_history(influx, shaper, points=10, timeout_s=2)
    assert history.series == [] and "does not answer" in (history.error or "")


def test_one_machine_also_gets_its_day_as_five_minute_means(shaper: RecordShaper) -> None:
    midnight = T0 // 86_400_000 * 86_400_000
    statements = history_queries(shaper, 10, thing="R1", since_ms=midnight)
    assert len(statements) == 7
    assert all(f"time >= {midnight}ms" in s and "GROUP BY time(300s)" in s for s in statements[5:])
    assert len(history_queries(shaper, 10, since_ms=midnight)) == 5  # all machines: no day
    day = serie(
        "machine_data",
        {"thing": "R1", "quantity": "actSpeed_C11"},
        ["result"],
        [[T0 - 600_000, 1.5], [T0 - 300_000, 2.5], [T0, 3.5]],  # the last: of the recent points
    )
    results = [*answer(), {"statement_id": 5, "series": [day]}, {"statement_id": 6}]
    history = shape_history(results, shaper, 10)
    speed = next(s for s in history.series if s["quantity"] == "actSpeed_C11")
    assert speed["t"] == [T0 - 600_000, T0 - 300_000, T0, T0 + 1000, T0 + 2000]
    assert speed["v"] == [1.5, 2.5, 1.0, 2.0, 3.0]
