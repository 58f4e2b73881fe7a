"""`statestream config show` and the CLI's one-line errors, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run_cli


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"STATESTREAM_PATHS__DATA_DIR": str(tmp_path / "data")}


def test_config_show_prints_the_effective_settings(env: dict[str, str]) -> None:
    result = run_cli(
        "config", "show", inherit_settings=False, env={**env, "STATESTREAM_MQTT__PORT": "2883"}
    )
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["mqtt"]["port"] == 2883
    assert shown["kafka"]["bootstrap_servers"] == "localhost:9092"
    assert shown["spark"]["checkpoint_root"] == f"{env['STATESTREAM_PATHS__DATA_DIR']}/checkpoints"


def test_secrets_are_masked_unless_reveal(env: dict[str, str]) -> None:
    env = {**env, "STATESTREAM_MQTT__PASSWORD": "hunter2"}
    masked = run_cli("config", "show", inherit_settings=False, env=env)
    assert "hunter2" not in masked.stdout
    assert json.loads(masked.stdout)["mqtt"]["password"] == "**********"
    revealed = run_cli("config", "show", "--reveal", inherit_settings=False, env=env)
    assert json.loads(revealed.stdout)["mqtt"]["password"] == "hunter2"


def test_invalid_setting_is_one_line_and_exit_code_2(env: dict[str, str]) -> None:
    result = run_cli(
        "config",
        "show",
        inherit_settings=False,
        env={**env, "STATESTREAM_MQTT__PORT": "not-a-port"},
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: invalid setting mqtt.port (env STATESTREAM_MQTT__PORT)")
    assert "Traceback" not in result.stderr


def test_config_file_option(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "site.toml"
    config.write_text('[influx]\nurl = "http://influx.plant.example:8086"\ndatabase = "plant"\n')
    result = run_cli("--config", str(config), "config", "show", inherit_settings=False, env=env)
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["influx"]["url"] == "http://influx.plant.example:8086"
    assert shown["influx"]["database"] == "plant"


def test_missing_config_file_is_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    result = run_cli(
        "--config",
        str(tmp_path / "missing.toml"),
        "config",
        "show",
        inherit_settings=False,
        env=env,
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: config file {tmp_path / 'missing.toml'} does not exist"
