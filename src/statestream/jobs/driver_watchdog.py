"""The driver's watchdog: the JVM that a Python launches as its Spark driver ends with that Python.

PySpark launches the driver (spark-submit's shell, which becomes the JVM) as a child of the
Python, and the JVM's gateway exits when its stdin closes, that is when the Python ends. That tie
is loose. It only holds once the gateway runs: a Ctrl-C while the JVM starts makes PySpark remove
the folder where the JVM is to leave its address, the JVM's main thread fails, and the gateway's
thread keeps the JVM up for good, its parent gone (issue #50). And the exit on stdin's end runs
Spark's shutdown hooks, which can hang.

`spark_session` launches a new driver inside `watched_launch`: the first time, this Python starts
its watchdog, this module run as a separate small Python (`-I -S`, the standard library only), in
a session of its own (a signal to the Python's process group, Ctrl-C in a terminal, does not
reach it) and holding none of the Python's standard streams (a reader of the Python's output is
not kept waiting by it). The watchdog reads its lifeline, a pipe whose write end only the Python
holds, as `statestream.demo`'s parts do: the read ends when the Python has ended, however it
ended, and the watchdog does nothing before. Then it looks for the Spark processes the Python
launched, known by a token in their environment that `watched_launch` set for the launch and
that the launched processes inherit (spark-class's shell, Spark's launcher, the driver's JVM and
the executors it starts; not Spark's Python workers, which end on their own). It gives them
`GRACE_S` to end as they do at stdin's end, then SIGKILLs those still running; each is held by a
pidfd, which names that process and no later one with its pid. Linux only.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Iterator

TOKEN_ENV = "STATESTREAM_DRIVER_WATCHDOG"  # set to the token of the Python that launches them
GRACE_S = 10.0  # a JVM whose Python ended has this long to end on its own
_SPARK = b"org.apache.spark."  # in the command line of each process the launch starts

_started_by = 0  # the process that started (or tried to start) the watchdog below
# its `Popen`, kept until that process ends (annotated without `typing`, which the watchdog, this
# module too, would import for nothing)
_watchdog: object = None
_token = ""  # the token its Spark processes carry ("": it did not start)
_lifeline = -1  # the write end of its lifeline: open until that process ends


@contextlib.contextmanager
def watched_launch(*, enabled: bool = True) -> Iterator[None]:
    """Within it, the Spark processes this Python launches carry its watchdog's token: they end
    with this Python (`GRACE_S` after it). Without a watchdog (not `enabled`, or it could not
    start: one warning), the launch goes on unwatched."""
    inherited = os.environ.pop(TOKEN_ENV, None)  # another Python's: not for this launch
    token = start_watchdog() if enabled else ""
    if token:
        os.environ[TOKEN_ENV] = token
    try:
        yield
    finally:
        os.environ.pop(TOKEN_ENV, None)
        if inherited is not None:
            os.environ[TOKEN_ENV] = inherited


def start_watchdog() -> str:
    """This process's watchdog, started the first time: its token ("" if it could not start)."""
    global _started_by, _watchdog, _token, _lifeline
    if _started_by == os.getpid():
        return _token
    if _lifeline >= 0:  # a forked child's copy of its parent's lifeline
        os.close(_lifeline)
    _started_by, _watchdog, _token, _lifeline = os.getpid(), None, "", -1
    import logging  # here: the watchdog itself, which runs this module, needs neither
    import subprocess

    token = f"{os.getpid()}-{os.urandom(6).hex()}"
    read_end, write_end = os.pipe()  # not inherited by anything else this process starts
    try:
        if not hasattr(os, "pidfd_open"):
            raise OSError("this system has no pidfd_open (Linux 5.3 or later)")
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__, str(read_end), token],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(read_end,),
            start_new_session=True,
            cwd="/",
        )
    except OSError as error:
        os.close(write_end)
        logging.getLogger("statestream.jobs").warning(
            "the Spark driver's watchdog did not start (%s): a driver JVM may outlive this "
            "process if it is stopped while the JVM starts",
            error,
        )
        return ""
    finally:
        os.close(read_end)
    _watchdog, _token, _lifeline = watchdog, token, write_end
    return token


def watch(lifeline: int, token: str) -> None:
    """The watchdog: wait for the lifeline's end, then end the Spark processes carrying `token`
    that do not end on their own within `GRACE_S`."""
    with contextlib.suppress(OSError):
        while os.read(lifeline, 64):
            pass
    deadline = time.monotonic() + GRACE_S
    running = {fd: pid for pid in _carrying(token) if (fd := _pidfd(pid, token)) is not None}
    poller = select.poll()
    for fd in running:
        poller.register(fd, select.POLLIN)  # readable once that process has ended
    while running and (left_s := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(int(left_s * 1000) + 1):
            poller.unregister(fd)
            del running[fd]
    for fd in running:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)


def _carrying(token: str) -> list[int]:
    """The Spark processes, but this one, whose environment holds `token`."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and _carries(int(name), token):
            pids.append(int(name))
    return pids


def _carries(pid: int, token: str) -> bool:
    """Whether process `pid` is a Spark process whose environment holds `token`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if _SPARK not in cmdline.read():
                return False
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"\0{TOKEN_ENV}={token}\0".encode() in b"\0" + environ.read()
    except OSError:  # ended, or not ours to read
        return False


def _pidfd(pid: int, token: str) -> int | None:
    """A pidfd of process `pid` if it is still the one carrying `token` (not a reused pid)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    if _carries(pid, token):
        return fd
    os.close(fd)
    return None


if __name__ == "__main__":
    for _signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(_signum, signal.SIG_IGN)
    watch(int(sys.argv[1]), sys.argv[2])
