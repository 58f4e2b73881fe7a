"""The demo's signal handling, in this process and in a demo without parts (tests/integration/
test_demo.py runs a whole demo ended by SIGTERM, by SIGKILL and, started in the background, by
SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.cli.demo_cmd import _stop_on
from tests.support import sigint_ignored, start_in_the_background


@pytest.fixture
def handlers() -> Iterator[None]:
    """Restore this process's SIGTERM and SIGHUP handlers after the test."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_stop_signal_interrupts_as_ctrl_c_does(handlers: None, signum: int) -> None:
    """A service manager's SIGTERM and a closed terminal's SIGHUP take the Ctrl-C path."""
    _stop_on(signal.SIGTERM, signal.SIGHUP)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 1.0)  # if not at once, the handler raises during this wait


def test_during_the_orderly_stop_both_signals_are_ignored(handlers: None) -> None:
    _stop_on(signal.SIGTERM, signal.SIGHUP)
    _stop_on()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        os.kill(os.getpid(), signum)  # would end pytest if it were not ignored
        assert signal.getsignal(signum) is signal.SIG_IGN


# `statestream demo` as it runs, without services or parts: what it starts is stubbed out
_DEMO_WITHOUT_PARTS = """
import sys
import statestream.demo, statestream.services, statestream.services.topics
from statestream.cli import main

class Parts:
    pipeline_pid = None

    def __init__(self, settings, options) -> None:
        pass

    def start(self, say) -> None:
        say("parts started")

    def raise_if_one_ended(self) -> None:
        pass

    def stop(self, say) -> None:
        say("parts stopped")

statestream.services.start_services = lambda settings: []
statestream.services.topics.create_topics = lambda settings: None
statestream.demo.Demo = Parts
sys.argv = ["statestream", "demo"]
main()
"""


def test_a_demo_started_in_the_background_stops_on_sigint(tmp_path: Path) -> None:
    """A shell starts `statestream demo &` with SIGINT ignored; the demo takes it back, so
    `kill -INT` stops it cleanly, as Ctrl-C does (tests/integration/test_demo.py: a whole demo)."""
    demo = start_in_the_background(
        [sys.executable, "-c", _DEMO_WITHOUT_PARTS],
        env={**os.environ, "STATESTREAM_PATHS__DATA_DIR": str(tmp_path), "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        lines = []
        for line in demo.stdout:  # until the demo runs
            lines.append(line)
            if "Ctrl-C stops the demo" in line:
                break
        assert "parts started\n" in lines, "".join(lines)
        assert not sigint_ignored(demo.pid)
        os.killpg(demo.pid, signal.SIGINT)
        output, _ = demo.communicate(timeout=20)
    finally:
        demo.kill()
        demo.wait()
    assert demo.returncode == 0, output
    assert "stopping the demo" in output and "parts stopped" in output and "demo stopped" in output
