"""The parts a chaos run kills and starts again: its own child processes (the connector and the
Spark pipeline's driver, each the statestream command a user would run) and the local services
(on a local cluster: one of the Kafka brokers, one of the Spark workers).

Each part counts its kills and its starts after the first (restarts); a child process that ends
on its own (the pipeline when a query gives up on a broker that is down) is started again too,
and counted as an exit. A service whose process ends while it starts again after a kill is
started once more (`START_ATTEMPTS`), and the start that failed is reported with how it ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from statestream.chaos.loss_window import READ_LATE_S, BrokerKill
from statestream.config import Settings
from statestream.demo import DemoPart
from statestream.services.base import LocalService
from statestream.services.mosquitto import MosquittoBroker
from statestream.services.stack import ExitedWhileStarting, local_services, start_services

START_ATTEMPTS = 3  # starts of a service after a kill before the run gives up on it


@dataclass
class PartCounts:
    """What happened to one component during the run."""

    kills: int = 0
    restarts: int = 0
    exits: int = 0  # ended on its own (not killed) and started again
    failed_starts: list[str] = field(default_factory=list)  # a start that ended early, and how

    def to_json(self) -> dict[str, object]:
        return {
            "kills": self.kills,
            "restarts": self.restarts,
            "exits": self.exits,
            "failed_starts": self.failed_starts,
        }


@dataclass
class ChildPart:
    """A statestream command in its own process group (`DemoPart`), killed with -9."""

    part: DemoPart
    environment: dict[str, str]
    counts: PartCounts = field(default_factory=PartCounts)
    down: bool = False  # killed, not started again yet

    @property
    def running(self) -> bool:
        return self.part.running

    def start(self) -> None:
        self.part.start(self.environment)

    def kill(self, _target: str) -> None:
        self.part.kill()
        self.counts.kills += 1
        self.down = True

    def restart(self) -> None:
        self.start()
        self.counts.restarts += 1
        self.down = False

    def restart_if_ended(self) -> bool:
        """Start it again when it ended on its own; True if it had."""
        if self.down or self.running:
            return False
        self.counts.exits += 1
        self.restart()
        return True

    def stop(self) -> None:
        self.part.stop()


@dataclass
class ServicePart:
    """A local service (Kafka: any of its brokers; Spark: any of its workers), killed with -9
    and started with `start_services`, which starts what is not running and waits until it
    answers (a worker: until it is registered with the master again).

    A kill -9 goes to the process group of the process: a worker's executors and their Python
    workers die with it, as on a machine that is lost."""

    settings: Settings
    service: str  # kafka, mosquitto, influxdb, spark-worker: the processes named so or `<it>-<n>`
    counts: PartCounts = field(default_factory=PartCounts)
    down: bool = False
    broker_kills: list[BrokerKill] = field(default_factory=list)  # Mosquitto's, with its last save

    def processes(self) -> dict[str, LocalService]:
        found = local_services(self.settings)
        return {s.name: s for s in found if _named(s.name, self.service)}

    @property
    def running(self) -> bool:
        return all(s.running_pid() is not None for s in self.processes().values())

    def kill(self, target: str) -> None:
        """kill -9 `target` (the service, `kafka-<n>` of three brokers, `spark-worker-<n>`)."""
        processes = self.processes()
        service = processes.get(target, next(iter(processes.values())))
        pid = service.running_pid()
        if isinstance(service, MosquittoBroker):
            # what it acknowledged since its last save, or since it was started after a kill
            # that came later (acknowledgements before that were the killed one's)
            after = self.broker_kills[-1].at + READ_LATE_S if self.broker_kills else 0.0
            saved = max(_modified_at(service.store_file), after)
            self.broker_kills.append(BrokerKill(time.time(), saved))
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # each service runs in a session of its own
            _reap(pid)
        self.counts.kills += 1
        self.down = True

    def save_store(self, timeout_s: float = 10.0) -> None:
        """Make Mosquitto save its store now (SIGUSR1) and wait until it has: the connector's
        session and subscription are then in it, and a restarted Mosquitto keeps them."""
        for service in self.processes().values():
            pid = service.running_pid()
            if not isinstance(service, MosquittoBroker) or pid is None:
                continue
            before = _modified_at(service.store_file)
            os.kill(pid, signal.SIGUSR1)
            deadline = time.monotonic() + timeout_s
            while _modified_at(service.store_file) == before and time.monotonic() < deadline:
                time.sleep(0.05)

    def restart(self) -> None:
        """`start_services`: starts this service, and any other that is down at this moment.

        A process that ends while it starts is started again, as a supervisor would, up to
        `START_ATTEMPTS` times; each such start is kept in `counts.failed_starts` (reported)."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                start_services(self.settings)
                break
            except ExitedWhileStarting as exc:
                self.counts.failed_starts.append(str(exc))
                if attempt == START_ATTEMPTS:
                    raise
        self.counts.restarts += 1
        self.down = False

    def restart_if_ended(self) -> bool:
        if self.down or self.running:
            return False
        self.counts.exits += 1
        self.restart()
        return True


def _named(process: str, service: str) -> bool:
    """Whether `process` (`kafka-2`, `spark-worker-1`, `mosquitto`) is one of `service`'s."""
    return process == service or (
        process.startswith(f"{service}-") and process.removeprefix(f"{service}-").isdigit()
    )


def _modified_at(store_file: Path) -> float:
    """When Mosquitto last wrote its persistence file (0.0: never)."""
    try:
        return store_file.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _reap(pid: int) -> None:
    """Collect a killed child of this process (`start_services` spawned it), else a zombie
    would still look alive."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


def child_part(name: str, args: list[str], log: Path, environment: dict[str, str]) -> ChildPart:
    """A part running `statestream <args>`, its output in `log`."""
    return ChildPart(DemoPart(name, args, log), environment)
