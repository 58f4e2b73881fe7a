"""A service that exits while it starts is named with how it ended: its exit code or signal."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from statestream.services._process import exit_status, is_alive, spawn, wait_until


def _spawned(tmp_path: Path, script: str) -> int:
    return spawn(
        ["sh", "-c", script],
        log_file=tmp_path / "out.log",
        pid_file=tmp_path / "pid",
        cwd=tmp_path,
    )


def test_an_exit_code_is_kept_after_the_child_was_reaped(tmp_path: Path) -> None:
    pid = _spawned(tmp_path, "exit 3")
    assert wait_until(lambda: not is_alive(pid), 10.0, interval_s=0.05)
    assert exit_status(pid) == " (exit code 3)"


def test_a_signal_is_named(tmp_path: Path) -> None:
    pid = _spawned(tmp_path, "sleep 30")
    assert exit_status(pid) == ""  # running still
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not is_alive(pid), 10.0, interval_s=0.05)
    assert exit_status(pid) == " (killed by SIGKILL)"


def test_a_process_this_one_did_not_start_says_nothing() -> None:
    assert exit_status(os.getpid()) == ""
