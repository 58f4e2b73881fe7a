"""A Spark standalone cluster of 2 workers and 3 Kafka brokers, started as `services up` does.

Own data folder and own ports, so a developer's running services are never touched; MQTT and
InfluxDB point at another machine, so `up` leaves them out. Everything is stopped at the end and
no process of the data folder may outlive the module.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from statestream.services._process import command_line
from tests.support import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

ROLES = {
    "kafka-broker-1",
    "kafka-broker-2",
    "kafka-broker-3",
    "spark-master",
    "spark-worker-1",
    "spark-worker-2",
}


def _free_range(count: int) -> int:
    """The first of `count` consecutive TCP ports nobody listens on."""
    for _ in range(50):
        first = random.randrange(20_000, 30_000)
        with ExitStack() as stack:
            try:
                for port in range(first, first + count):
                    stack.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise AssertionError("no free port range")


def _our_processes(data_dir: Path) -> list[str]:
    """The command lines of the processes that run from `data_dir`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            args = command_line(int(proc.name))
            if args and str(data_dir) in " ".join(args):
                found.append(" ".join(args)[:160])
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a running cluster (`services up` done, with its duration in s)."""
    data_dir = tmp_path_factory.mktemp("cluster") / "data"
    kafka, spark = _free_range(6), _free_range(6)
    env = {
        "STATESTREAM_PATHS__DATA_DIR": str(data_dir),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": f"localhost:{kafka}",
        "STATESTREAM_KAFKA__CONTROLLER_PORT": str(kafka + 1),
        "STATESTREAM_KAFKA__BROKER_HEAP": "512m",
        "STATESTREAM_MQTT__HOST": "mqtt.invalid",
        "STATESTREAM_INFLUX__URL": "http://influx.invalid:8086",
        "STATESTREAM_SERVICES__KAFKA_BROKERS": "3",
        "STATESTREAM_SERVICES__SPARK_WORKERS": "2",
        "STATESTREAM_SERVICES__SPARK_WORKER_MEMORY": "1g",
        "STATESTREAM_SERVICES__SPARK_MASTER_PORT": str(spark),
        "STATESTREAM_SERVICES__SPARK_MASTER_UI_PORT": str(spark + 1),
        "STATESTREAM_SERVICES__SPARK_WORKER_PORT": str(spark + 2),
        "STATESTREAM_SERVICES__SPARK_WORKER_UI_PORT": str(spark + 4),
    }
    started = time.monotonic()
    up = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=240)
    env["UP_S"] = f"{time.monotonic() - started:.1f}"
    try:
        assert up.exit_code == 0, up.stderr + up.stdout
        yield env
    finally:
        down = run_cli("services", "down", env=env, inherit_settings=False, timeout_s=180)
        assert down.exit_code == 0, down.stderr
        assert _our_processes(data_dir) == []


def test_status_json_has_one_running_object_per_process(cluster: dict[str, str]) -> None:
    print(f"services up: {cluster['UP_S']} s")
    result = run_cli("services", "status", "--json", env=cluster, inherit_settings=False)
    statuses = json.loads(result.stdout)
    local = {s["role"]: s for s in statuses if s["state"] != "external"}
    assert set(local) == ROLES
    assert all(s["state"] == "running" and s["pid"] and s["port"] for s in local.values())
    assert {s["service"] for s in local.values()} == {"kafka", "spark"}
    assert local["spark-master"]["port"] == int(cluster["STATESTREAM_SERVICES__SPARK_MASTER_PORT"])
    assert Path(local["kafka-broker-2"]["log"]).name == "kafka-2.log"
    assert result.exit_code == 3  # MQTT and InfluxDB are elsewhere and do not answer


def test_topics_have_three_replicas(cluster: dict[str, str]) -> None:
    created = run_cli("topics", "create", env=cluster, inherit_settings=False)
    assert created.exit_code == 0, created.stderr
    bootstrap = cluster["STATESTREAM_KAFKA__BOOTSTRAP_SERVERS"]
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    partitions = topics["machine.data"].partitions.values()
    assert [len(p.replicas) for p in partitions] == [3] * 5
    assert all(len(p.isrs) == 3 for p in partitions)


def test_join_on_the_cluster_equals_the_offline_join(cluster: dict[str, str]) -> None:
    env = {k: v for k, v in cluster.items() if k != "UP_S"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.cluster_job"],
        env={**_clean_environment(), **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(result)
    port = cluster["STATESTREAM_SERVICES__SPARK_MASTER_PORT"]
    assert result["master"] == f"spark://localhost:{port}"
    assert result["executors"] == 2
    assert result["trivial"] == sum(range(1, 1001))
    assert result["query_error"] is None
    assert result["pairs"] == result["distinct_pairs"] == result["expected_pairs"] > 0
    assert result["equal"]


def _clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("STATESTREAM_")}
