"""Process management: whose port it is, whose pid it is, stopping with and without SIGKILL."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from statestream.environment import find_executable
from statestream.errors import EnvironmentProblem
from statestream.services._process import (
    is_alive,
    last_problem,
    owned_pid,
    port_listener,
    spawn,
    stop_pid,
    wait_until,
)


def test_port_listener_names_the_listening_process() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        listener = port_listener(port)
        assert listener is not None
        assert listener.pid == os.getpid()
        assert f"port {port} is in use by pid {os.getpid()}" in listener.describe()
    assert port_listener(port) is None


def test_a_pid_is_ours_only_with_our_markers(tmp_path: Path) -> None:
    pid_file = tmp_path / "run" / "sleeper.pid"
    marker = str(tmp_path / "sleeper.conf")
    command = [sys.executable, "-c", "import time; time.sleep(60)", marker]
    pid = spawn(command, log_file=tmp_path / "sleeper.log", pid_file=pid_file, cwd=tmp_path)
    try:
        assert wait_until(lambda: owned_pid(pid_file, ("python", marker)) == pid, 10)
        assert owned_pid(pid_file, ("python", str(tmp_path / "other.conf"))) is None
    finally:
        assert stop_pid(pid, timeout_s=10) is False  # SIGTERM was enough
    assert not is_alive(pid)
    assert owned_pid(pid_file, ("python", marker)) is None


def test_unreadable_pid_file_means_not_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "x.pid"
    pid_file.write_text("not a pid")
    assert owned_pid(pid_file, ("x",)) is None
    assert owned_pid(tmp_path / "missing.pid", ("x",)) is None


def test_a_process_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "stubborn.log"
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    pid = spawn(
        [sys.executable, "-c", code], log_file=log, pid_file=tmp_path / "s.pid", cwd=tmp_path
    )
    assert wait_until(lambda: "ready" in log.read_text(), 10)
    assert stop_pid(pid, timeout_s=1) is True
    assert not is_alive(pid)


def test_missing_program_says_run_make_setup() -> None:
    with pytest.raises(EnvironmentProblem, match=r"no-such-program is not installed .*make setup"):
        find_executable("no-such-program", "no-such-package")


def test_last_problem_waits_for_a_settling_check_and_gives_up_on_a_lasting_one() -> None:
    answers = iter(["broker 2 is not in the cluster's metadata", "only 1 of 3 brokers", None])
    assert last_problem(lambda: next(answers), timeout_s=5.0, interval_s=0.01) is None
    calls: list[int] = []

    def lasting() -> str:
        calls.append(1)
        return f"refused, look {len(calls)}"

    assert last_problem(lasting, timeout_s=0.05, interval_s=0.01).startswith("refused")
    assert 2 <= len(calls) <= 7
