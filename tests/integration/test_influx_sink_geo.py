"""The InfluxDB sink writes the geo query's cell results: the latest result of a cell and window
is its point, null means are left out, bad results go to the dead-letter topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer

from statestream.config import Settings
from tests.integration.test_influx_sink import _run, sink_settings  # noqa: F401 (a fixture)
from tests.support import influx_query, read_committed

pytestmark = pytest.mark.integration

CELL = "881126d339fffff"
START = 1_764_051_300_000


def _cell(start: int, vehicles: int, speed: float | None, final: bool, **extra) -> dict:
    return {
        "cell": CELL,
        "resolution": 8,
        "window_start": start,
        "window_end": start + 60_000,
        "vehicles": vehicles,
        "positions": 10 * vehicles,
        "mean_speed": speed,
        "mean_delay": -5.0,
        "final": final,
        **extra,
    }


def test_cell_results_become_one_point_per_cell_and_window(
    spark,
    sink_settings: Settings,  # noqa: F811 (the fixture imported above)
    unique_name: str,
    tmp_path: Path,
) -> None:
    results = [
        _cell(START, 2, 4.0, False),  # early
        _cell(START, 3, 5.0, True),  # on-time final
        _cell(START, 4, 6.0, True),  # a late update: the point InfluxDB keeps
        _cell(START + 60_000, 1, None, False),  # no speeds: no mean_speed field
    ]
    bad = json.dumps(_cell(START, 1, 1.0, final="yes")).encode()
    producer = Producer(sink_settings.kafka.client_config())
    for value in [*(json.dumps(r).encode() for r in results), bad]:
        producer.produce(sink_settings.topics.vehicle_cells, key=CELL, value=value)
    producer.flush(30)

    _run(spark, sink_settings, unique_name, tmp_path)
    points = influx_query(sink_settings, "SELECT * FROM vehicle_cells ORDER BY time")
    assert [
        (p["time"], p["cell"], p["resolution"], p["vehicles"], p["mean_speed"], p["final"])
        for p in points
    ] == [
        (START * 1000, CELL, "8", 4.0, 6.0, 1.0),
        ((START + 60_000) * 1000, CELL, "8", 1.0, None, 0.0),
    ]
    dead = [json.loads(v) for v in read_committed(sink_settings, sink_settings.topics.dead_letter)]
    assert [(d["stage"], d["reason"]) for d in dead] == [
        ("sink_influx", "final is missing or not true or false")
    ]
