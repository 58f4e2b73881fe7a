"""Helpers the tests share: running the CLI as a user does, free ports, reading Kafka, InfluxDB."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from statestream.config import Settings
from statestream.services import grant_access
from statestream.testing import read_committed

__all__ = [
    "TEST_JVM_ENVIRONMENT",
    "CliResult",
    "close_wait_sockets",
    "free_ports",
    "granted",
    "influx_query",
    "read_committed",
    "run_cli",
    "sigint_ignored",
    "start_in_the_background",
]

# The suite's Spark JVMs compile with C1 only: its jobs are short, and on two cores C2's compiler
# threads took more than they gave back (a `run join` of a small topic started ~1.8x faster).
# Jobs that a test starts with only its own settings get it too (`run_cli`, the cluster's). C1
# alone reserves a 48 MB code cache (C2 240 MB), too little for a long run of generated classes.
TEST_JVM_ENVIRONMENT = {
    "STATESTREAM_SPARK__JAVA_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
}


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


def start_in_the_background(command: list[str], **popen: object) -> subprocess.Popen:
    """`command` started as a shell without job control (a script, a CI job) starts `command &`:
    with SIGINT ignored, which stays so across exec; in a process group of its own here, so that
    `os.killpg` reaches it as `kill -INT -- -PGID` would. `popen`: more arguments of `Popen`.

    Ignored here for the moment of the start, not in a `preexec_fn` (unsafe with threads)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.Popen(command, process_group=0, **popen)  # type: ignore[arg-type]
    finally:
        signal.signal(signal.SIGINT, previous)


def sigint_ignored(pid: int) -> bool:
    """Whether process `pid` ignores SIGINT (its SigIgn mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & 1 << (signal.SIGINT - 1))
    raise AssertionError(f"no SigIgn in /proc/{pid}/status")


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


CLOSE_WAIT = "08"  # the state's code in /proc/net/tcp


def close_wait_sockets(pid: int) -> int:
    """How many TCP sockets of process `pid` wait for it to close them: the peer closed its end
    (CLOSE_WAIT). They grow by one per lost close, the way a leak of sockets shows."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    waiting = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            waiting += fields[3] == CLOSE_WAIT and fields[9] in inodes
    return waiting
