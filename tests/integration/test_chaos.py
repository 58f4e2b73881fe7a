"""`statestream chaos` for half a minute at 1,000 rows/s on services of its own: the connector,
the Spark pipeline, Mosquitto, InfluxDB and Kafka each killed with -9 and started again under
load, nothing lost outside Mosquitto's loss window and nothing doubled at the end, and Mosquitto
left as it was found: configured the same, taking a full-speed ingest as fast as before.

Seed 31 is the plan that lost records at 2,000 rows/s while every row lost was counted as lost
(Mosquitto acknowledges before it saves); its kills come in the order that hurts: the connector,
InfluxDB, Kafka (the connector stalls, Mosquitto queues), then Mosquitto, then the pipeline.

The same run carries vehicles (`--vehicles`): every published position on the positions topic
(outside Mosquitto's loss window), the geo cells and the bunching alerts as the pure engines
make them of the positions topic, each once, and one InfluxDB point per cell.

The services run from their own data folder on free ports (never a developer's running services
or the suite's), and are stopped at the end with nothing of them left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statestream.chaos import COMPONENTS, kill_schedule
from tests.integration.cluster_support import free_range, our_processes
from tests.support import run_cli

pytestmark = pytest.mark.integration

MINUTES = 0.5
SEED = 31
RATE = 1000  # rows/s
WINDOW_S = 10  # the windows of both statistics: within 30 s of records, they close (10 s + 10 s)
INGEST_ROWS = 20_000
VEHICLES = 16  # every eighth starts right behind the one before it: two pairs may bunch


def _environment(data_dir: Path) -> dict[str, str]:
    kafka, others = free_range(2), free_range(4)
    return {
        "STATESTREAM_PATHS__DATA_DIR": str(data_dir),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": f"localhost:{kafka}",
        "STATESTREAM_KAFKA__CONTROLLER_PORT": str(kafka + 1),
        "STATESTREAM_KAFKA__BROKER_HEAP": "512m",
        "STATESTREAM_MQTT__PORT": str(others),
        "STATESTREAM_MQTT__TLS_PORT": str(others + 1),
        "STATESTREAM_INFLUX__URL": f"http://localhost:{others + 2}",
        "STATESTREAM_INFLUX__RPC_PORT": str(others + 3),
        "STATESTREAM_DASHBOARD__PORT": str(others + 4),
        "STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2",
        "STATESTREAM_STATS__WINDOW_S": str(WINDOW_S),
        "STATESTREAM_QUANTITY_STATS__WINDOW_S": str(WINDOW_S),
    }


def test_the_seed_kills_every_component_within_the_run() -> None:
    plan = kill_schedule(SEED, MINUTES * 60, kafka_brokers=1)
    assert {kill.component for kill in plan} == set(COMPONENTS)


def _ingest_rows_per_s(env: dict[str, str]) -> float:
    done = run_cli(
        "bench", "ingest", "--rows", str(INGEST_ROWS), "--client", "statestream", "--json",
        env=env, inherit_settings=False, timeout_s=600,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr[-3000:]
    return float(json.loads(done.stdout.strip().splitlines()[-1])["rows_per_s"])


def test_chaos_loses_and_doubles_nothing_and_leaves_mosquitto_as_found(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {
        **_environment(data_dir),
        "STATESTREAM_GEO__WINDOW_S": str(WINDOW_S),  # cell windows close within the run
        "STATESTREAM_GEO__BUNCHING_S": str(WINDOW_S),
    }
    config = data_dir / "mosquitto" / "mosquitto.conf"
    try:
        up = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=240)
        assert up.exit_code == 0, up.stderr + up.stdout
        topics = run_cli("topics", "create", env=env, inherit_settings=False, timeout_s=120)
        assert topics.exit_code == 0, topics.stderr  # bench ingest's connector checks them all
        configured, before = config.read_text(), _ingest_rows_per_s(env)
        run = run_cli(
            "chaos", "--minutes", str(MINUTES), "--seed", str(SEED), "--rate", str(RATE),
            "--vehicles", str(VEHICLES), "--json", env=env, inherit_settings=False,
            timeout_s=1500,
        )  # fmt: skip
        assert run.stdout.strip(), run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["problems"] == [], report  # the rate held among them
        assert report["rate_held"] >= 0.95 * RATE, report
        assert report["kills"] >= len(COMPONENTS)
        assert all(report["kills_by_component"][name] >= 1 for name in COMPONENTS), report
        assert report["rows_published"] > 0
        assert report["records_lost_outside_window"] == 0, report
        windows = report["mosquitto_windows"]
        assert len(windows) == report["kills_by_component"]["mosquitto"], report
        assert report["records_lost"] == sum(w["records_lost"] for w in windows), report
        for component in COMPONENTS:  # InfluxDB's: the sink's first batch with points after it
            assert all(s is not None and s > 0 for s in report["recovery_s"][component]), report
        assert report["latency_p50_s"] > 0 and report["latency_p99_s"] >= report["latency_p50_s"]
        assert report["pairs_expected"] > 0
        assert report["pairs_missing"] == 0 and report["pairs_duplicated"] == 0, report
        assert report["points_missing"] == 0, report
        assert report["windows_expected"] > 0
        assert report["windows_missing"] == report["windows_wrong"] == 0, report
        assert report["windows_duplicated"] == 0, report
        quantities = report["queries"]["quantity_stats"]
        assert quantities["expected"] > 0, report
        assert quantities["missing"] == quantities["wrong"] == quantities["duplicated"] == 0
        assert quantities["unexpected"] == 0, report
        _assert_vehicles(report)
        assert run.exit_code == 0, report
        assert config.read_text() == configured  # no save after every change left behind
        after = _ingest_rows_per_s(env)
        assert after >= 0.5 * before, (before, after)  # a Mosquitto saving after every message
        # takes a few hundred rows/s against thousands: the ratio tells them apart
    finally:
        run_cli("services", "down", env=env, inherit_settings=False, timeout_s=120)
    assert our_processes(data_dir) == []


def _assert_vehicles(report: dict) -> None:
    """Every position there outside Mosquitto's loss windows; cells, alerts and points right."""
    assert report["vehicles_asked"] == VEHICLES
    assert report["vehicle_rate_held"] >= 0.95 * VEHICLES, report
    vehicles = report["vehicles"]
    assert vehicles["messages_published"] >= VEHICLES * MINUTES * 60 * 0.9, vehicles
    assert vehicles["positions_lost_outside_window"] == 0, vehicles
    windows = vehicles["mosquitto_windows"]
    assert len(windows) == report["kills_by_component"]["mosquitto"], vehicles
    assert vehicles["positions_lost"] == sum(w["records_lost"] for w in windows), vehicles
    points = vehicles["cell_points"]
    assert points["expected"] > 0, vehicles
    assert points["missing"] == points["wrong"] == points["unexpected"] == 0, vehicles
    geo = report["queries"]["geo"]
    assert geo["expected"] > 0, report
    assert geo["missing"] == geo["wrong"] == geo["duplicated"] == geo["unexpected"] == 0, geo
    bunching = report["queries"]["bunching"]
    assert bunching["missing"] == bunching["wrong"] == 0, bunching
    assert bunching["duplicated"] == bunching["unexpected"] == 0, bunching
