"""`statestream chaos` for a minute on services of its own: the connector, the Spark pipeline,
Mosquitto, InfluxDB and Kafka each killed with -9 and started again under load, and nothing lost
or doubled at the end.

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

MINUTES = 1.0
SEED = 1
WINDOW_S = 20  # the power levels' window: within a minute of records, windows close (20 s + 10 s)


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
    }


def test_the_seed_kills_every_component_within_the_run() -> None:
    plan = kill_schedule(SEED, MINUTES * 60, kafka_brokers=1)
    assert {kill.component for kill in plan} == set(COMPONENTS)


def test_chaos_loses_and_doubles_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = _environment(data_dir)
    try:
        up = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=240)
        assert up.exit_code == 0, up.stderr + up.stdout
        run = run_cli(
            "chaos", "--minutes", str(MINUTES), "--seed", str(SEED), "--json",
            env=env, inherit_settings=False, timeout_s=1200,
        )  # fmt: skip
        assert run.stdout.strip(), run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["problems"] == [], report
        assert report["kills"] >= len(COMPONENTS)
        assert all(report["kills_by_component"][name] >= 1 for name in COMPONENTS), report
        assert report["rows_published"] > 0
        assert report["records_lost"] == 0, report
        assert report["pairs_expected"] > 0
        assert report["pairs_missing"] == 0 and report["pairs_duplicated"] == 0, report
        assert report["points_missing"] == 0, report
        assert report["windows_expected"] > 0
        assert report["windows_missing"] == report["windows_wrong"] == 0, report
        assert report["windows_duplicated"] == 0, report
        assert run.exit_code == 0, report
    finally:
        run_cli("services", "down", env=env, inherit_settings=False, timeout_s=120)
    assert our_processes(data_dir) == []
