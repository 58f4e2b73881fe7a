"""`statestream services up | status | down` as a user runs them, on a data folder and ports of
its own, so the services the rest of the suite shares are not touched."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import free_ports, run_cli

pytestmark = pytest.mark.integration

SERVICES = ("kafka", "mosquitto", "influxdb")


def _states(table: str) -> dict[str, tuple[str, str]]:
    """{service: (state, pid)} from the Rich table a services command prints."""
    states = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] in SERVICES:
            states[cells[0]] = (cells[1], cells[2])
    return states


def test_up_status_up_again_down(tmp_path: Path) -> None:
    kafka, controller, mqtt, mqtt_tls, influx, influx_rpc = free_ports(6)
    env = {
        "STATESTREAM_PATHS__DATA_DIR": str(tmp_path / "data"),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": f"localhost:{kafka}",
        "STATESTREAM_KAFKA__CONTROLLER_PORT": str(controller),
        "STATESTREAM_KAFKA__BROKER_HEAP": "512m",
        "STATESTREAM_MQTT__PORT": str(mqtt),
        "STATESTREAM_MQTT__TLS_PORT": str(mqtt_tls),
        "STATESTREAM_INFLUX__URL": f"http://localhost:{influx}",
        "STATESTREAM_INFLUX__RPC_PORT": str(influx_rpc),
    }
    try:
        before = run_cli("services", "status", env=env)
        assert before.exit_code == 3, before.stderr
        assert {state for state, _ in _states(before.stdout).values()} == {"stopped"}

        up = run_cli("services", "up", env=env)
        assert up.exit_code == 0, up.stderr
        started = _states(up.stdout)
        assert {name: state for name, (state, _) in started.items()} == dict.fromkeys(
            SERVICES, "started"
        )
        for name in SERVICES:
            assert (tmp_path / "data" / "logs" / f"{name}.log").is_file()

        status = run_cli("services", "status", env=env)
        assert status.exit_code == 0, status.stdout
        assert _states(status.stdout) == {
            name: ("running", pid) for name, (_, pid) in started.items()
        }

        again = run_cli("services", "up", env=env)
        assert again.exit_code == 0, again.stderr
        assert _states(again.stdout) == {
            name: ("running", pid) for name, (_, pid) in started.items()
        }
    finally:
        down = run_cli("services", "down", env=env)
    assert down.exit_code == 0, down.stderr
    assert {state for state, _ in _states(down.stdout).values()} == {"stopped"}
    after = run_cli("services", "status", env=env)
    assert after.exit_code == 3
    assert {state for state, _ in _states(after.stdout).values()} == {"stopped"}
    assert not list((tmp_path / "data" / "run").glob("*.pid"))
