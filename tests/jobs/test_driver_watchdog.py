"""A driver's JVM ends with the Python that launched it (issue #50), whenever that Python ends:
killed while the JVM starts, stopped with Ctrl-C then (which left the JVM running for good,
its main thread failed and the gateway's thread still up), killed once the session is up, or
killed with a JVM that cannot end by itself; and a Python that ends normally leaves neither a
JVM nor its watchdog behind, the JVM having ended on its own.

Each test starts a real driver in a Python of its own (its own session, as a job's) and finds
the driver's processes by the application name in their command lines.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from statestream.jobs.driver_watchdog import GRACE_S

pytestmark = pytest.mark.integration  # each starts a Spark driver

MARGIN_S = 15.0  # on top of the grace: a busy machine's delays
START_TIMEOUT_S = 180.0

_DRIVER = (
    "import sys\n"
    "from statestream.config import load_settings\n"
    "from statestream.jobs.session import spark_session\n"
    "spark_session(load_settings(), app_name=sys.argv[1], for_tests=True)\n"
    "print('up', flush=True)\n"
    "sys.stdin.readline()\n"  # then ends normally
)


class Driver:
    """A Python that starts a driver named `name`, then ends when its stdin does."""

    def __init__(self, folder: Path) -> None:
        self.name = f"watchdog-test-{uuid.uuid4().hex[:10]}"
        self.stderr = folder / "driver.err"
        env = {**os.environ, "STATESTREAM_PATHS__DATA_DIR": str(folder / "data")}
        with self.stderr.open("wb") as stderr:
            self.python = subprocess.Popen(
                [sys.executable, "-c", _DRIVER, self.name],
                env=env,
                cwd=folder,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )

    def spark_processes(self) -> dict[int, str]:
        """The live processes of this driver but its Python: pid → program (java, bash)."""
        found = {}
        for pid, argv in _processes().items():
            if pid != self.python.pid and self.name.encode() in b" ".join(argv):
                found[pid] = os.path.basename(argv[0].decode())
        return found

    def watchdogs(self) -> list[int]:
        """The live watchdogs of this driver's Python (its pid starts their token)."""
        token = f"{self.python.pid}-".encode()
        return [
            pid
            for pid, argv in _processes().items()
            if any(b"driver_watchdog" in arg for arg in argv) and argv[-1].startswith(token)
        ]

    def wait_for_java(self) -> None:
        """Until a JVM of this driver runs (the launcher's or the driver's: the JVM starts)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while "java" not in self.spark_processes().values():
            assert self.python.poll() is None, self.stderr.read_text()[-3000:]
            assert time.monotonic() < deadline, "no JVM started"
            time.sleep(0.02)

    def wait_until_up(self) -> None:
        assert self.python.stdout is not None
        assert self.python.stdout.readline() == b"up\n", self.stderr.read_text()[-3000:]

    def stop(self, signum: int, *, group: bool = False) -> None:
        """Send `signum` to the Python (`group`: to its process group, as Ctrl-C does)."""
        (os.killpg if group else os.kill)(self.python.pid, signum)
        self.python.wait(60)

    def clean_up(self) -> None:
        """Whatever a failed test left: the Python, its JVMs, its watchdog."""
        if self.python.poll() is None:
            self.python.kill()
            self.python.wait(60)
        for pid in [*self.spark_processes(), *self.watchdogs()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for stream in (self.python.stdin, self.python.stdout):
            if stream is not None:
                stream.close()


def _processes() -> dict[int, list[bytes]]:
    """Every live process's command line (zombies have none)."""
    processes = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")[:-1]
            except OSError:
                continue
            if argv:
                processes[int(name)] = argv
    return processes


def _eventually(what: Callable[[], object], seconds: float) -> object:
    """`what()` once it is falsy, or at the end of `seconds`."""
    deadline = time.monotonic() + seconds
    while (value := what()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return value


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Driver]:
    """A driver starting (its Python, after the test, killed with whatever it left)."""
    started = Driver(tmp_path)
    yield started
    started.clean_up()


@pytest.mark.parametrize(
    ("signum", "group"), [(signal.SIGKILL, False), (signal.SIGINT, True)], ids=["kill-9", "ctrl-c"]
)
def test_a_python_stopped_while_its_jvm_starts_leaves_no_jvm(
    driver: Driver, signum: int, group: bool
) -> None:
    """Ctrl-C there left a JVM running for good before the watchdog."""
    driver.wait_for_java()
    driver.stop(signum, group=group)
    assert _eventually(driver.spark_processes, GRACE_S + MARGIN_S) == {}
    assert _eventually(driver.watchdogs, MARGIN_S) == []


def test_a_python_killed_once_its_session_is_up_leaves_no_jvm(driver: Driver) -> None:
    driver.wait_until_up()
    driver.stop(signal.SIGKILL)
    assert _eventually(driver.spark_processes, GRACE_S + MARGIN_S) == {}
    assert _eventually(driver.watchdogs, MARGIN_S) == []


def test_a_jvm_that_does_not_end_with_its_python_is_killed_after_the_grace(driver: Driver) -> None:
    """A stopped JVM stands for one whose shutdown hangs: it cannot end by itself."""
    driver.wait_until_up()
    [jvm] = driver.spark_processes()
    os.kill(jvm, signal.SIGSTOP)
    driver.stop(signal.SIGKILL)
    ended = time.monotonic()
    assert _eventually(driver.spark_processes, GRACE_S + MARGIN_S) == {}
    assert time.monotonic() - ended > GRACE_S - 1.0  # it had its grace first
    assert _eventually(driver.watchdogs, MARGIN_S) == []


def test_a_python_that_ends_normally_leaves_nothing_and_kills_nothing(driver: Driver) -> None:
    """The watchdog kills only once the grace is over: gone before, it killed nothing."""
    driver.wait_until_up()
    [watchdog] = driver.watchdogs()
    assert os.getsid(watchdog) == watchdog  # a session of its own: Ctrl-C does not reach it
    streams = [os.readlink(f"/proc/{watchdog}/fd/{fd}") for fd in (0, 1, 2)]
    assert streams == [os.devnull] * 3  # the Python's output is not held open by it
    assert driver.python.stdin is not None
    driver.python.stdin.close()
    assert driver.python.wait(60) == 0, driver.stderr.read_text()[-3000:]
    ended = time.monotonic()
    left = _eventually(lambda: [*driver.watchdogs(), *driver.spark_processes()], GRACE_S)
    assert left == []
    assert time.monotonic() - ended < GRACE_S
