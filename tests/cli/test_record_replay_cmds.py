"""`statestream record mqtt` and `statestream replay` as a user runs them, where they stop
before any message moves: one line saying what is wrong (the MQTT ports point where nobody
listens). What they do with a broker is in tests/integration/test_record_replay.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import free_ports, run_cli


@pytest.fixture
def no_broker() -> dict[str, str]:
    plain, tls = free_ports(2)
    return {"STATESTREAM_MQTT__PORT": str(plain), "STATESTREAM_MQTT__TLS_PORT": str(tls)}


def _error_line(stderr: str) -> str:
    [line] = stderr.strip().splitlines()
    return line


def test_record_without_a_broker_is_one_line_and_leaves_no_file(
    no_broker: dict[str, str], tmp_path: Path
) -> None:
    result = run_cli(
        "record", "mqtt", "--topic", "#", "--to", str(tmp_path / "feed.log"), env=no_broker
    )
    assert result.exit_code == 2
    assert _error_line(result.stderr).startswith("error: cannot reach the MQTT broker at ")
    assert list(tmp_path.iterdir()) == []


def test_record_to_a_gz_name_says_to_give_the_plain_one(tmp_path: Path) -> None:
    result = run_cli("record", "mqtt", "--topic", "#", "--to", str(tmp_path / "feed.log.gz"))
    assert result.exit_code == 2
    assert "record to a plain name" in _error_line(result.stderr)


def test_replay_of_nothing_recorded_says_what_it_looked_for(tmp_path: Path) -> None:
    result = run_cli("replay", str(tmp_path / "feed.log"))
    assert result.exit_code == 2
    assert _error_line(result.stderr) == (
        f"error: no recording at {tmp_path / 'feed.log'}: no such file, and no parts "
        "feed.NNNNN.log[.gz] beside it"
    )


def test_replay_without_a_broker_is_one_line(no_broker: dict[str, str], tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text("2026-11-25T06:15:30.123456Z machine/states 1\n")
    result = run_cli("replay", str(dump), env=no_broker)
    assert result.exit_code == 2
    assert _error_line(result.stderr).startswith("error: cannot reach the MQTT broker at ")
