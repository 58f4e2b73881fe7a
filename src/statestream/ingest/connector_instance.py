"""One instance of a group of connectors (`connector_group`): `statestream connect mqtt
--member-of GROUP` in a process of its own, started again after it ended, its output read line by
line: echoed with its name, its "subscribed to" line noted, its last line of figures kept.

An instance stops cleanly when its parent ends, however it ended: it holds the read end of a pipe
whose write end only the parent holds (`statestream.demo.stop_when_demo_ends`, the lifeline of
the demo's parts, does the rest in the instance).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from statestream.demo import LIFELINE_ENV
from statestream.ingest.connector_process import READY_MARK

FIGURES_MARK = "instance figures: "  # an instance's last line: its counts as JSON, for the parent
# how an instance stopped by the group ends cleanly: after flushing and acknowledging (0), or
# killed by the signal before its handler was set, when it had connected to nothing yet
CLEAN_STOPS = (0, -signal.SIGTERM, -signal.SIGINT, 128 + signal.SIGINT)


@functools.cache
def _lifeline() -> int:
    """The read end of a pipe whose write end only this process holds: an instance that sees it
    close stops cleanly, however the parent ended (`statestream.demo.stop_when_demo_ends`)."""
    read_end, _write_end = os.pipe()
    return read_end


def exit_text(code: int) -> str:
    """How a process ended, in words.

    >>> exit_text(-9), exit_text(2)
    ('killed by SIGKILL', 'exit code 2')
    """
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


@dataclass
class ConnectorInstance:
    """One instance of the group: its process (started again after it ended), its output and
    what it reported."""

    index: int
    argv: list[str]
    environment: dict[str, str]
    echo: Callable[[ConnectorInstance, str], None]
    starts: int = 0
    ends: list[str] = field(default_factory=list)  # how each run that was not stopped ended
    quick_ends: int = 0  # ends in a row soon after the start (the group's STABLE_AFTER_S)
    restart_at: float | None = None
    stop_code: int | None = None  # its exit code when the group stopped it
    figures: list[dict[str, int]] = field(default_factory=list)  # one per run that ended cleanly
    last_lines: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    ready: threading.Event = field(default_factory=threading.Event)
    started_at: float = 0.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"connector-{self.index}"

    def start(self) -> None:
        self.ready.clear()
        lifeline = _lifeline()
        self.process = subprocess.Popen(
            self.argv,
            env={**self.environment, LIFELINE_ENV: str(lifeline)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(lifeline,),
        )
        self.starts += 1
        self.started_at = time.monotonic()
        self.restart_at = None
        self._reader = threading.Thread(
            target=self._read, args=(self.process,), name=f"{self.name}-output", daemon=True
        )
        self._reader.start()

    def poll(self) -> int | None:
        """The exit code once the process ended (its output read to the end), else None."""
        if self.process is None or self.process.poll() is None:
            return None
        if self._reader is not None:
            self._reader.join(10)
        return self.process.returncode

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(number)

    def error_line(self) -> str:
        """Its last line, without the `error: ` of a one-line error."""
        last = self.last_lines[-1] if self.last_lines else "no output"
        return last.removeprefix("error: ")

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            if line.startswith(FIGURES_MARK):
                with contextlib.suppress(ValueError):
                    self.figures.append(json.loads(line.removeprefix(FIGURES_MARK)))
                continue
            if READY_MARK in line:
                self.ready.set()
            self.last_lines.append(line)
            self.echo(self, line)
        process.stdout.close()
