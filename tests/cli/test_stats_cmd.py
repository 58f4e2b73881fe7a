"""`statestream run stats` as a user calls it, for what needs no Spark: help and refusals."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import run_cli


def test_help_names_the_options_and_the_topics() -> None:
    done = run_cli("run", "stats", "--help")
    assert done.exit_code == 0
    for text in ("--available-now", "--checkpoint", "--from", "analytics.machine.stats"):
        assert text in done.stdout


def test_a_checkpoint_with_other_windows_stops_in_one_line(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    lengths = {"window_ms": 60_000, "duty_window_ms": 600_000, "duty_slide_ms": 60_000}
    (checkpoint / "statestream-windows.json").write_text(json.dumps(lengths))
    done = run_cli(
        "run", "stats", "--checkpoint", str(checkpoint), env={"STATESTREAM_STATS__WINDOW_S": "30"}
    )
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and "use a new --checkpoint" in done.stderr
