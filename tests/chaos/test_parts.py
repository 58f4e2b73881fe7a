"""A chaos run's service part on a local cluster, without Spark: the Spark worker part is the
workers (not the master), a kill -9 takes the chosen worker's process group (its executors) and
leaves the other running, and a restart starts it again through `start_services`."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from statestream.chaos import SPARK_WORKER
from statestream.chaos.parts import ServicePart
from statestream.config import Settings, load_settings
from statestream.services._process import is_alive, read_pid, spawn, stop_pid
from statestream.services.spark import SparkWorker

# a worker stand-in: its command line carries the worker's markers (main class, configuration
# file); it starts a child in its process group, as a worker starts its executors
_WORKER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[3], "w").write(str(child.pid))
time.sleep(120)
"""


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        paths={"data_dir": tmp_path / "data"}, services={"kafka_brokers": 3, "spark_workers": 2}
    )


def _start_worker(settings: Settings, number: int) -> int:
    """A stand-in for worker `number`, its pid file where `services up` writes it; the pid of
    its child (an executor)."""
    worker = SparkWorker(settings, number)
    worker.home.mkdir(parents=True, exist_ok=True)
    executor_pid = worker.home / "executor.pid"
    executor_pid.unlink(missing_ok=True)
    command = [sys.executable, "-c", _WORKER, *worker.markers(), str(executor_pid)]
    spawn(command, log_file=worker.output_file, pid_file=worker.pid_file, cwd=worker.home)
    deadline = time.monotonic() + 30
    while read_pid(executor_pid) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = read_pid(executor_pid)
    assert pid is not None, "the stand-in did not start its child"
    return pid


def test_the_worker_part_is_the_workers_and_the_kafka_part_the_brokers(settings: Settings) -> None:
    assert list(ServicePart(settings, SPARK_WORKER).processes()) == [
        "spark-worker-1",
        "spark-worker-2",
    ]
    assert list(ServicePart(settings, "kafka").processes()) == ["kafka-1", "kafka-2", "kafka-3"]
    assert list(ServicePart(settings, "mosquitto").processes()) == ["mosquitto"]


def test_a_killed_worker_takes_its_executors_and_comes_back(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    executors = {number: _start_worker(settings, number) for number in (1, 2)}
    part = ServicePart(settings, SPARK_WORKER)
    workers = {name: service.running_pid() for name, service in part.processes().items()}
    try:
        assert part.running and None not in workers.values()
        part.kill("spark-worker-2")
        assert (part.counts.kills, part.down, part.running) == (1, True, False)
        assert part.processes()["spark-worker-2"].running_pid() is None
        assert _ended(executors[2]), "the killed worker's executor still runs"
        assert part.processes()["spark-worker-1"].running_pid() == workers["spark-worker-1"]
        assert is_alive(executors[1])

        started: list[Settings] = []
        monkeypatch.setattr(
            "statestream.chaos.parts.start_services",
            lambda s: started.append(s) or _start_worker(s, 2),
        )
        part.restart()
        assert started == [settings]
        assert (part.counts.restarts, part.down, part.running) == (1, False, True)
        assert not part.restart_if_ended()
    finally:
        for service in part.processes().values():
            pid = service.running_pid()
            if pid is not None:
                os.killpg(pid, signal.SIGKILL)  # the stand-in and its child
                stop_pid(pid, 5)


def _ended(pid: int) -> bool:
    """Whether `pid` ends within 5 s (an orphaned child is reaped by init, not by this process)."""
    deadline = time.monotonic() + 5
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not is_alive(pid)


def test_a_service_that_ends_while_it_starts_is_started_again_and_reported(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from statestream.chaos import parts
    from statestream.services.stack import ExitedWhileStarting

    outcomes: list[Exception | None] = [ExitedWhileStarting("Mosquitto exited (exit code 1)"), None]
    calls: list[Settings] = []

    def start(given: Settings) -> None:
        calls.append(given)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(parts, "start_services", start)
    part = ServicePart(settings, "mosquitto")
    part.down = True
    part.restart()
    assert len(calls) == 2 and not part.down and part.counts.restarts == 1
    assert part.counts.failed_starts == ["Mosquitto exited (exit code 1)"]
    assert part.counts.to_json()["failed_starts"] == ["Mosquitto exited (exit code 1)"]


def test_a_service_that_never_starts_fails_the_restart(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from statestream.chaos import parts
    from statestream.services.stack import ExitedWhileStarting

    def start(given: Settings) -> None:
        raise ExitedWhileStarting("InfluxDB exited (killed by SIGSEGV)")

    monkeypatch.setattr(parts, "start_services", start)
    part = ServicePart(settings, "influxdb")
    with pytest.raises(ExitedWhileStarting):
        part.restart()
    assert len(part.counts.failed_starts) == parts.START_ATTEMPTS and part.counts.restarts == 0
