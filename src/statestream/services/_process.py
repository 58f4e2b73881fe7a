"""Process management shared by the local services: pid files, ownership checks, ports, stopping.

A service is "ours" when its pid file names a live process whose command line contains the
service's markers (its binary and the configuration file statestream generated under the data
folder) — a recycled pid or a second instance from another data folder is not ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Popen objects of the services this Python process started, kept so they are reaped on stop.
_children: dict[int, subprocess.Popen[bytes]] = {}
_exit_codes: dict[int, int] = {}  # of those children once reaped, for the error that follows


def command_line(pid: int) -> list[str] | None:
    """The arguments of a live process, or None (no such process, a zombie, or still exec'ing)."""
    if not _exists(pid):
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.rstrip(b"\0").decode(errors="replace").split("\0") if raw else None


def _exists(pid: int) -> bool:
    """True while `pid` is a process that is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def read_pid(pid_file: Path) -> int | None:
    """The pid stored in `pid_file`, or None when the file is missing or not a number."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def owned_pid(pid_file: Path, markers: Sequence[str]) -> int | None:
    """The pid in `pid_file` if it is a live process whose arguments contain every marker."""
    pid = read_pid(pid_file)
    if pid is None:
        return None
    args = command_line(pid)
    if args is None:
        return None
    joined = " ".join(args)
    return pid if all(marker in joined for marker in markers) else None


def spawn(
    command: Sequence[str],
    *,
    log_file: Path,
    pid_file: Path,
    cwd: Path,
    env: dict[str, str] | None = None,
) -> int:
    """Start `command` detached (own session), output appended to `log_file`; write its pid file."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        log.write(f"\n=== statestream started at {time.strftime('%F %T')}: {command[0]}\n".encode())
        log.flush()
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children[process.pid] = process
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{process.pid}\n")
    return process.pid


def terminate(pid: int) -> None:
    """Send SIGTERM to `pid` without waiting (a cluster's nodes are asked to stop together)."""
    _signal(pid, signal.SIGTERM)


def stop_pid(pid: int, timeout_s: float = 20.0) -> bool:
    """SIGTERM `pid`, wait up to `timeout_s` for it to exit, then SIGKILL. True if it was killed."""
    _signal(pid, signal.SIGTERM)
    if wait_until(lambda: not is_alive(pid), timeout_s, interval_s=0.1):
        return False
    _signal(pid, signal.SIGKILL)
    wait_until(lambda: not is_alive(pid), 5.0, interval_s=0.1)
    return True


def is_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie or a reaped child counts as gone)."""
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _exit_codes[pid] = child.returncode
        _children.pop(pid, None)
        return False
    return _exists(pid)


def exit_status(pid: int) -> str:
    """How a child this process started ended: " (exit code N)", " (killed by SIGNAME)", or ""
    when it was not our child or runs still."""
    child = _children.get(pid)
    code = _exit_codes.get(pid) if child is None else child.poll()
    if code is None:
        return ""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f" (killed by {signal.Signals(-code).name})"
    return f" (exit code {code})"


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.25) -> bool:
    """Call `predicate` until it returns True or `timeout_s` passes; its last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def last_problem(
    check: Callable[[], str | None], timeout_s: float, interval_s: float = 0.5
) -> str | None:
    """Call `check` until it finds no problem (None) or `timeout_s` passes; its last answer."""
    deadline = time.monotonic() + timeout_s
    problem = check()
    while problem is not None and time.monotonic() < deadline:
        time.sleep(interval_s)
        problem = check()
    return problem


@dataclass(frozen=True)
class PortListener:
    """A process listening on a TCP port (pid and command None when they cannot be seen)."""

    port: int
    pid: int | None
    command: str | None

    def describe(self) -> str:
        if self.pid is None:
            return f"port {self.port} is in use by another process"
        return f"port {self.port} is in use by pid {self.pid} ({self.command})"


def port_listener(port: int) -> PortListener | None:
    """Who listens on TCP `port` on this machine (any address), or None when the port is free."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        if inodes & _socket_inodes(proc):
            command = " ".join(" ".join(command_line(int(proc.name)) or ["?"]).split())
            return PortListener(port, int(proc.name), command[:120])
    return PortListener(port, None, None)


def _socket_inodes(proc: Path) -> set[str]:
    """The inodes of the sockets a process has open ({} when its fds cannot be read)."""
    inodes = set()
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return set()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rpartition(":")[2], 16) == port:
                inodes.add(inode)
    return inodes


def log_tail(log_file: Path, lines: int = 200) -> list[str]:
    """The last `lines` lines of a log file ([] when it does not exist)."""
    try:
        with open(log_file, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            return handle.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return []
