"""`services up` of a local cluster in broken environments: one line saying what is wrong and
what to do, as a user sees it on the command line.

Own data folder and ports; Kafka, MQTT and InfluxDB point at other machines, so `up` starts only
the Spark master and workers. Whatever a test started is stopped by `services down`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import free_ports, run_cli

ELSEWHERE = {
    "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": "kafka.invalid:9092",
    "STATESTREAM_MQTT__HOST": "mqtt.invalid",
    "STATESTREAM_INFLUX__URL": "http://influx.invalid:8086",
}


def _spark_env(tmp_path: Path, worker_port: int | None = None) -> dict[str, str]:
    """One worker on free ports (`worker_port` for its RPC port when given)."""
    master, master_ui, worker, worker_ui = free_ports(4)
    return {
        **ELSEWHERE,
        "STATESTREAM_PATHS__DATA_DIR": str(tmp_path / "data"),
        "STATESTREAM_SERVICES__SPARK_WORKERS": "1",
        "STATESTREAM_SERVICES__SPARK_WORKER_MEMORY": "512m",
        "STATESTREAM_SERVICES__SPARK_MASTER_PORT": str(master),
        "STATESTREAM_SERVICES__SPARK_MASTER_UI_PORT": str(master_ui),
        "STATESTREAM_SERVICES__SPARK_WORKER_PORT": str(worker_port or worker),
        "STATESTREAM_SERVICES__SPARK_WORKER_UI_PORT": str(worker_ui),
    }


@pytest.fixture
def foreign_listener() -> Iterator[tuple[int, int]]:
    """A process statestream did not start, listening on a port: (port, pid)."""
    (port,) = free_ports(1)
    code = (
        "import socket, time\n"
        f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen()\n"
        "print('listening', flush=True)\n"
        "time.sleep(120)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "listening"
    yield port, process.pid
    process.kill()
    process.wait()


def test_a_taken_worker_port_is_one_line_naming_its_setting(
    tmp_path: Path, foreign_listener: tuple[int, int]
) -> None:
    port, pid = foreign_listener
    result = run_cli("services", "up", env=_spark_env(tmp_path, port), inherit_settings=False)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot start Spark worker 1: port {port} is in use by pid")
    assert f"pid {pid}" in lines[0]
    assert lines[0].endswith("(STATESTREAM_SERVICES__SPARK_WORKER_PORT)")
    assert not (tmp_path / "data" / "run").exists()  # nothing started, not even the master


@pytest.mark.integration
def test_a_worker_that_cannot_start_is_one_line_with_its_log(tmp_path: Path) -> None:
    env = _spark_env(tmp_path)
    work = tmp_path / "data" / "spark" / "worker-1" / "work"
    work.parent.mkdir(parents=True)
    work.write_text("a file where the worker's work folder must be\n")
    try:
        result = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=180)
    finally:
        down = run_cli("services", "down", env=env, inherit_settings=False, timeout_s=120)
    assert down.exit_code == 0, down.stderr
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: Spark worker 1 exited during start-up")
    assert "ERROR Utils: Failed to create directory" in lines[0]
    assert lines[0].endswith(f"see {tmp_path / 'data' / 'logs' / 'spark-worker-1.log'}")
