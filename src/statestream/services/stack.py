"""Start, check and stop the local services together: Kafka, Mosquitto, InfluxDB, Spark.

>>> statuses = start_services(load_settings())  # doctest: +SKIP
>>> [s.state for s in statuses]                 # doctest: +SKIP
['started', 'started', 'started']

Only what is not running yet is started (the example is not run with the doctests). Kafka is
one process or three (`services.kafka_brokers`), Spark a master and its workers when
`services.spark_workers` > 0; each process has its own row.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from statestream.config import Settings, ensure_local_secrets
from statestream.errors import EnvironmentProblem, ServiceError
from statestream.services._process import (
    command_line,
    exit_status,
    is_alive,
    last_problem,
    log_tail,
    port_listener,
    read_pid,
    spawn,
    stop_pid,
    terminate,
    wait_until,
)
from statestream.services.base import LocalService
from statestream.services.influxdb import InfluxServer
from statestream.services.kafka import KafkaBroker
from statestream.services.mosquitto import MosquittoBroker
from statestream.services.spark import spark_cluster

_CLUSTER_PROCESS = re.compile(r"^(kafka(-\d+)?|spark-master|spark-worker-\d+)$")
_STACK_FRAME = re.compile(r"^\s*(at |\.\.\. \d+ more|Caused by: )")
_LOGGED_ERRORS = (" ERROR ", " FATAL ")
HEALTH_SETTLE_S = 15.0  # how long a started service may take to pass its health check
_ERROR_WORDS = ("ERROR", "Error", "error", "Exception", "FATAL", "fatal")

State = Literal["started", "running", "unhealthy", "stopped", "not running", "external"]


class ExitedWhileStarting(ServiceError):
    """A service's process ended before it answered (the message says how it ended)."""


@dataclass(frozen=True)
class ServiceStatus:
    """What one process of a service is doing, as `services up | down | status` report it.

    `name` is the process's own (`kafka-2`, `spark-worker-1`), `service` the service it belongs
    to (`kafka`, `spark`) and `role` what it is there (`kafka-broker-2`, `spark-worker-1`).
    """

    name: str
    state: State
    address: str
    pid: int | None = None
    log_file: Path | None = None
    detail: str = ""
    answers: bool = False
    service: str = ""
    role: str = ""
    port: int | None = None

    def to_json(self) -> dict[str, object]:
        """The status as `services status --json` prints it."""
        return {
            "service": self.service or self.name,
            "role": self.role or self.name,
            "pid": self.pid,
            "port": self.port,
            "state": self.state,
            "log": str(self.log_file) if self.log_file else None,
            "address": self.address,
            "answers": self.answers,
            "detail": self.detail,
        }


def local_services(settings: Settings) -> list[LocalService]:
    """The processes statestream knows, in start order."""
    brokers = range(1, settings.services.kafka_brokers + 1)
    return [
        *(KafkaBroker(settings, node) for node in brokers),
        MosquittoBroker(settings),
        InfluxServer(settings),
        *spark_cluster(settings),
    ]


def start_services(settings: Settings) -> list[ServiceStatus]:
    """Start every local service that is not running yet and wait until each answers.

    Idempotent: services already running from this data folder are only checked. Services whose
    settings point at another machine are skipped. Raises `EnvironmentProblem` (missing program,
    port taken by another process) before starting anything, `ServiceError` when one fails.
    """
    settings = ensure_local_secrets(settings)
    services = local_services(settings)
    running = {s.name: s.running_pid() for s in services if s.is_local}
    to_start = [s for s in services if s.is_local and running[s.name] is None]
    for service in to_start:
        service.check_environment()
    for service in to_start:
        _check_ports_free(service)
    for service in to_start:
        service.prepare()
    for wave in sorted({s.start_wave for s in to_start}):
        starting = [s for s in to_start if s.start_wave == wave]
        spawned = {service.name: _spawn(service) for service in starting}
        running.update(spawned)
        for service in starting:
            _wait_until_ready(service, spawned[service.name])
    statuses = []
    for service in services:
        if not service.is_local:
            statuses.append(_external_status(service))
            continue
        pid = running[service.name]
        assert pid is not None
        if service not in to_start:
            _wait_until_ready(service, pid)
        state: State = "started" if service in to_start else "running"
        statuses.append(_status(service, state, pid, answers=True))
    return statuses


def _spawn(service: LocalService) -> int:
    return spawn(
        service.command(),
        log_file=service.output_file,
        pid_file=service.pid_file,
        cwd=service.home,
        env=service.environment(),
    )


def stop_services(settings: Settings, names: Collection[str] | None = None) -> list[ServiceStatus]:
    """Stop the services this data folder's pid files name (SIGTERM, wait, then SIGKILL).

    `names` limits it to some services or processes, e.g. `{"kafka"}` or `{"spark-worker-2"}`;
    processes not ours are never touched. Without `names`, processes this data folder started
    under other settings (a worker or broker more than the settings now say) are stopped too.
    """
    statuses = []
    services = local_services(settings)
    chosen = [s for s in services if names is None or {s.name, s.service} & set(names)]
    pids = {s.name: s.running_pid() for s in chosen if s.is_local}
    _terminate_clusters(chosen, pids)
    for service in reversed(chosen):
        if not service.is_local:
            detail = "not on this machine: nothing to stop"
            statuses.append(ServiceStatus(service.name, "external", service.address, detail=detail))
            continue
        statuses.append(_stop(service, pids[service.name]))
    if names is None:
        statuses += _stop_leftovers(settings, {s.name for s in services})
    return list(reversed(statuses))


def _stop(service: LocalService, pid: int | None) -> ServiceStatus:
    if pid is None:
        service.pid_file.unlink(missing_ok=True)
        return _status(service, "not running", None)
    killed = stop_pid(pid, service.stop_timeout_s)
    service.pid_file.unlink(missing_ok=True)
    return _status(service, "stopped", pid, "did not stop on SIGTERM: killed" if killed else "")


def _terminate_clusters(services: list[LocalService], pids: dict[str, int | None]) -> None:
    """SIGTERM every Kafka node at once: the last one alone would wait for a controller quorum."""
    nodes = [s for s in services if s.service == "kafka" and s.is_local]
    if len(nodes) > 1:
        for node in nodes:
            pid = pids[node.name]
            if pid is not None:
                terminate(pid)


def _stop_leftovers(settings: Settings, known: set[str]) -> list[ServiceStatus]:
    """Stop the processes whose pid files the settings do not name, if they run from this folder.

    E.g. worker 3 after `services.spark_workers` went from 3 to 2: its command line still names
    its configuration file under the data folder, which is how it is recognised as ours.
    """
    statuses = []
    data_dir = str(settings.paths.data_dir)
    for pid_file in sorted((settings.paths.data_dir / "run").glob("*.pid")):
        name = pid_file.stem
        if name in known or not _CLUSTER_PROCESS.match(name):
            continue
        pid = read_pid(pid_file)
        args = command_line(pid) if pid is not None else None
        if pid is not None and args is not None and data_dir in " ".join(args):
            killed = stop_pid(pid)
            detail = "no longer in the settings" + ("; killed" if killed else "")
            statuses.append(ServiceStatus(name, "stopped", "", pid, detail=detail, role=name))
        pid_file.unlink(missing_ok=True)
    return statuses


def service_statuses(settings: Settings) -> list[ServiceStatus]:
    """Each service's state, pid, address and log file; external services are probed."""
    statuses = []
    for service in local_services(settings):
        if not service.is_local:
            statuses.append(_external_status(service))
            continue
        pid = service.running_pid()
        if pid is None:
            taken = [port_listener(port) for port in service.port_settings()]
            detail = "; ".join(t.describe() for t in taken if t is not None)
            statuses.append(_status(service, "stopped", None, detail))
            continue
        problem = service.health()
        state: State = "running" if problem is None else "unhealthy"
        statuses.append(_status(service, state, pid, problem or "", answers=problem is None))
    return _with_too_few_brokers(settings, statuses)


def _with_too_few_brokers(settings: Settings, statuses: list[ServiceStatus]) -> list[ServiceStatus]:
    """The stopped brokers of a local cluster say so when fewer than min.insync.replicas run.

    The metadata of the broker left may still name the others (without a controller quorum
    nothing marks them gone), so the processes are counted, not the metadata's brokers.
    """
    brokers = [s for s in statuses if s.service == "kafka" and s.state != "external"]
    running = sum(s.pid is not None for s in brokers)
    needed = settings.services.min_insync_replicas
    if len(brokers) < 2 or running >= needed:
        return statuses
    note = (
        f"{running} of {len(brokers)} Kafka brokers run, fewer than min.insync.replicas={needed}: "
        "no write can succeed and producers wait; start them with `statestream services up`"
    )
    return [
        replace(s, detail="; ".join(filter(None, (note, s.detail))))
        if s in brokers and s.pid is None
        else s
        for s in statuses
    ]


def _check_ports_free(service: LocalService) -> None:
    for port, env_var in service.port_settings().items():
        listener = port_listener(port)
        if listener is not None:
            raise EnvironmentProblem(
                f"cannot start {service.title}: {listener.describe()}, which statestream did "
                f"not start from {service.settings.paths.data_dir}; stop that process or choose "
                f"another port ({env_var})"
            )


def _wait_until_ready(service: LocalService, pid: int) -> None:
    ready = wait_until(
        lambda: not is_alive(pid) or service.answers(), service.start_timeout_s, interval_s=0.5
    )
    if not is_alive(pid):
        service.pid_file.unlink(missing_ok=True)
        raise ExitedWhileStarting(
            f"{service.title} exited during start-up{exit_status(pid)}{_hint(service)}; "
            f"see {service.output_file}"
        )
    if not ready:
        raise ServiceError(
            f"{service.title} (pid {pid}) did not answer on {service.address} within "
            f"{service.start_timeout_s:.0f} s{_hint(service)}; see {service.log_file}, or run "
            "`statestream services down` and `up` again"
        )
    service.after_start()
    # a service that has just answered may still be settling: a restarted Kafka broker can be
    # missing from another broker's metadata for a moment, so one look is not the verdict
    problem = last_problem(service.health, HEALTH_SETTLE_S)
    if problem is not None:
        raise ServiceError(
            f"{service.title} (pid {pid}) runs but {problem}; see {service.log_file}"
        )


def _hint(service: LocalService) -> str:
    """The last error line of the service's logs, as ': <line>' ('' when there is none).

    A line logged at level ERROR or FATAL says what went wrong in the service's own words, so it
    comes before any other line naming an error or exception; a Java stack frame is never one.
    """
    for log in (service.output_file, service.log_file):
        lines = [line.strip() for line in log_tail(log) if not _STACK_FRAME.match(line)]
        for words in (_LOGGED_ERRORS, _ERROR_WORDS):
            for line in reversed(lines):
                if any(word in line for word in words):
                    return f": {line[:300]}"
    return ""


def _status(
    service: LocalService,
    state: State,
    pid: int | None,
    detail: str = "",
    *,
    answers: bool = False,
) -> ServiceStatus:
    return ServiceStatus(
        service.name,
        state,
        service.address,
        pid,
        service.log_file,
        detail,
        answers,
        service=service.service,
        role=service.role,
        port=service.port,
    )


def _external_status(service: LocalService) -> ServiceStatus:
    """A service on another machine: statestream does not run it, only asks whether it answers."""
    problem = service.health()
    detail = f"not on this machine, not started here; {problem or 'answers'}"
    return ServiceStatus(
        service.name,
        "external",
        service.address,
        detail=detail,
        answers=not problem,
        service=service.service,
        role=service.role,
    )
