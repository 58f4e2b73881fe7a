"""`statestream connect mqtt` as a child process: started with given settings, stopped or killed.

The benchmark and the crash test run the connector as its own process, as it runs in production,
so that it can be killed with SIGKILL and so that it has a core of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from statestream.config import Settings, settings_environment
from statestream.errors import ServiceError

READY_MARK = "subscribed to"


class ConnectorProcess:
    """One `statestream connect mqtt` child; its stderr goes to `log_file`."""

    def __init__(self, settings: Settings, log_file: Path, *extra_args: str) -> None:
        self.settings = settings
        self.log_file = log_file
        self.extra_args = extra_args
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the connector and wait until it has subscribed (its session exists then)."""
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("STATESTREAM_")},
            **settings_environment(self.settings),
            "COLUMNS": "200",
        }
        offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "statestream", "connect", "mqtt", *self.extra_args],
                env=environment,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout_s
        while READY_MARK not in self._log_since(offset):
            if self._process.poll() is not None:
                raise ServiceError(f"the connector exited: {self._log_since(offset)[-2000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise ServiceError(f"the connector did not subscribe within {timeout_s:.0f} s")
            time.sleep(0.05)

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM: the connector flushes, acknowledges and exits; its exit code."""
        return self._signal(signal.SIGTERM, timeout_s)

    def kill(self) -> int:
        """SIGKILL, as a crash would end it."""
        return self._signal(signal.SIGKILL, 30.0)

    def output(self) -> str:
        return self._log_since(0)

    def _signal(self, number: int, timeout_s: float) -> int:
        process = self._process
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(number)
        try:
            return process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait(10)
        finally:
            self._process = None

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_file, "rb") as handle:
                handle.seek(offset)
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""
