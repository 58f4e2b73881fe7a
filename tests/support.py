"""Helpers the tests share: running the CLI as a user does, free ports, reading Kafka, InfluxDB."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass

from statestream.config import Settings
from statestream.services import grant_access
from statestream.testing import read_committed

__all__ = [
    "TEST_JVM_ENVIRONMENT",
    "CliResult",
    "free_ports",
    "granted",
    "influx_query",
    "read_committed",
    "run_cli",
]

# The suite's Spark JVMs compile with C1 only: its jobs are short, and on two cores C2's compiler
# threads took more than they gave back (a `run join` of a small topic started ~1.8x faster).
# Jobs that a test starts with only its own settings get it too (`run_cli`, the cluster's).
TEST_JVM_ENVIRONMENT = {"STATESTREAM_SPARK__JAVA_OPTIONS": "-XX:TieredStopAtLevel=1"}


def granted(settings: Settings) -> Settings:
    """`settings`, after granting the components (connector, jobs, dashboard) their ACLs on the
    topics it names: a test's own topics are not those `services up` granted."""
    grant_access(settings)
    return settings


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    inherit_settings: bool = True,
    timeout_s: float = 300,
) -> CliResult:
    """Run `python -m statestream ARGS` in a child process, with extra environment variables.

    `inherit_settings=False` drops the STATESTREAM_* variables of this process first (but for
    the suite's JVM options, `TEST_JVM_ENVIRONMENT`). Tables
    are printed 200 columns wide, so no cell is wrapped.
    """
    base = {
        key: value
        for key, value in os.environ.items()
        if inherit_settings or not key.startswith("STATESTREAM_")
    }
    if not inherit_settings:
        base.update(TEST_JVM_ENVIRONMENT)
    done = subprocess.run(
        [sys.executable, "-m", "statestream", *args],
        env={**base, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports nobody listens on right now."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def influx_query(settings, q: str, database: str | None = "") -> list[dict]:
    """Rows of an InfluxQL query as dicts (times in µs); `database` "" is the settings' one."""
    from statestream.sinks.influx import influx_rows

    return influx_rows(settings.influx, q, database)
