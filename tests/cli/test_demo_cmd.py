"""The demo's signal handling, in this process (tests/integration/test_demo.py runs a whole demo
ended by SIGTERM and by SIGKILL)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from statestream.cli.demo_cmd import _stop_on


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
