"""`services up` in broken environments: one clear message, nothing started, no stack trace.

These need the programs `make setup` installs, but not the running services: they use their own
data folder, and the services they do not test point at another machine so `up` skips them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.config import Settings, load_settings
from statestream.errors import EnvironmentProblem, ServiceError
from statestream.services import start_services
from tests.support import free_ports, run_cli

ELSEWHERE = {
    "kafka": "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS=kafka.invalid:9092",
    "mqtt": "STATESTREAM_MQTT__HOST=mqtt.invalid",
    "influx": "STATESTREAM_INFLUX__URL=http://influx.invalid:8086",
}


def _env(tmp_path: Path, *elsewhere: str, **extra: str) -> dict[str, str]:
    env = dict(ELSEWHERE[name].split("=", 1) for name in elsewhere)
    return {"STATESTREAM_PATHS__DATA_DIR": str(tmp_path / "data"), **env, **extra}


def _settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_settings()


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


def test_services_on_other_machines_are_not_started(tmp_path: Path) -> None:
    result = run_cli("services", "up", env=_env(tmp_path, "kafka", "mqtt", "influx"))
    assert result.exit_code == 0, result.stderr
    for address in ("kafka.invalid:9092", "mqtt.invalid:1883", "http://influx.invalid:8086"):
        assert address in result.stdout
    assert result.stdout.count("external") == 3
    assert "not on this" in result.stdout
    assert not (tmp_path / "data" / "run").exists()


def test_port_taken_by_a_foreign_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign_listener: tuple[int, int]
) -> None:
    port, pid = foreign_listener
    env = _env(tmp_path, "kafka", "influx", STATESTREAM_MQTT__PORT=str(port))
    with pytest.raises(EnvironmentProblem) as caught:
        start_services(_settings(env, monkeypatch))
    message = str(caught.value)
    assert f"cannot start Mosquitto: port {port} is in use by pid {pid}" in message
    assert "STATESTREAM_MQTT__PORT" in message
    assert not (tmp_path / "data" / "run" / "mosquitto.pid").exists()


def test_port_taken_on_the_command_line(tmp_path: Path, foreign_listener: tuple[int, int]) -> None:
    port, pid = foreign_listener
    env = _env(tmp_path, "kafka", "influx", STATESTREAM_MQTT__PORT=str(port))
    result = run_cli("services", "up", env=env)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot start Mosquitto: port {port} is in use by pid {pid}")


def test_corrupt_kafka_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka_port, controller_port = free_ports(2)
    env = _env(
        tmp_path,
        "mqtt",
        "influx",
        STATESTREAM_KAFKA__BOOTSTRAP_SERVERS=f"localhost:{kafka_port}",
        STATESTREAM_KAFKA__CONTROLLER_PORT=str(controller_port),
    )
    meta = tmp_path / "data" / "kafka" / "data" / "meta.properties"
    meta.parent.mkdir(parents=True)
    meta.write_bytes(b"\x00\xff\xfe garbage")
    with pytest.raises(ServiceError) as caught:
        start_services(_settings(env, monkeypatch))
    message = str(caught.value)
    assert f"Kafka's data folder {meta.parent} is corrupt: meta.properties is unreadable" in message
    assert f"delete {meta.parent.parent}" in message
    assert not (tmp_path / "data" / "run" / "kafka.pid").exists()


def test_kafka_storage_from_before_the_scram_users_says_what_to_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka_port, controller_port = free_ports(2)
    env = _env(
        tmp_path,
        "mqtt",
        "influx",
        STATESTREAM_KAFKA__BOOTSTRAP_SERVERS=f"localhost:{kafka_port}",
        STATESTREAM_KAFKA__CONTROLLER_PORT=str(controller_port),
    )
    meta = tmp_path / "data" / "kafka" / "data" / "meta.properties"
    meta.parent.mkdir(parents=True)
    meta.write_text("cluster.id=abc\nnode.id=1\nversion=1\n")  # formatted, but without users
    with pytest.raises(ServiceError) as caught:
        start_services(_settings(env, monkeypatch))
    message = str(caught.value)
    assert "formatted without SCRAM users" in message and "\n" not in message
    assert f"delete {meta.parent.parent}" in message
    assert not (tmp_path / "data" / "run" / "kafka.pid").exists()


def test_missing_java_on_the_command_line(tmp_path: Path) -> None:
    env = _env(tmp_path, "mqtt", "influx", PATH=str(tmp_path), JAVA_HOME="")
    result = run_cli("services", "up", env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: Java is not installed")
    assert "Traceback" not in result.stderr


def test_spark_master_port_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign_listener: tuple[int, int]
) -> None:
    port, pid = foreign_listener
    env = _env(
        tmp_path,
        "kafka",
        "mqtt",
        "influx",
        STATESTREAM_SERVICES__SPARK_WORKERS="1",
        STATESTREAM_SERVICES__SPARK_MASTER_PORT=str(port),
    )
    with pytest.raises(EnvironmentProblem) as caught:
        start_services(_settings(env, monkeypatch))
    message = str(caught.value)
    assert f"cannot start Spark master: port {port} is in use by pid {pid}" in message
    assert "STATESTREAM_SERVICES__SPARK_MASTER_PORT" in message
    assert not (tmp_path / "data" / "run" / "spark-master.pid").exists()
