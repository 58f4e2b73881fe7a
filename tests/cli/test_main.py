"""The entry point every command goes through: it takes back the SIGINT a shell ignores in what it
starts in the background, so that `kill -INT` stops any command as Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support import sigint_ignored, start_in_the_background

# a command that runs until Ctrl-C, as `connect mqtt`, `simulate … --loop forever` or `run` do,
# reached through `statestream.cli.main` as the console script and `python -m statestream` reach
# every command
_WAITING_COMMAND = """
import sys, time
from statestream.cli import app, main

@app.command("wait")
def wait() -> None:
    print("waiting", flush=True)
    time.sleep(60)

sys.argv = ["statestream", "wait"]
main()
"""


def test_a_command_started_in_the_background_stops_on_sigint() -> None:
    command = start_in_the_background(
        [sys.executable, "-c", _WAITING_COMMAND],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert command.stdout is not None and command.stdout.readline() == "waiting\n"
        assert not sigint_ignored(command.pid)
        os.killpg(command.pid, signal.SIGINT)
        _, errors = command.communicate(timeout=20)
    finally:
        command.kill()
        command.wait()
    assert command.returncode == 130, errors  # Ctrl-C's exit code (typer's), no stack trace
    assert "Traceback" not in errors, errors
