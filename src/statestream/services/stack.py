"""Start, check and stop the local services together: Kafka, Mosquitto and InfluxDB.

>>> statuses = start_services(load_settings())   # starts what is not running yet
>>> [s.state for s in statuses]
['started', 'started', 'started']
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from statestream.config import Settings, ensure_local_secrets
from statestream.errors import EnvironmentProblem, ServiceError
from statestream.services._process import (
    is_alive,
    log_tail,
    port_listener,
    spawn,
    stop_pid,
    wait_until,
)
from statestream.services.base import LocalService
from statestream.services.influxdb import InfluxServer
from statestream.services.kafka import KafkaBroker
from statestream.services.mosquitto import MosquittoBroker

State = Literal["started", "running", "unhealthy", "stopped", "not running", "external"]


@dataclass(frozen=True)
class ServiceStatus:
    """What one service is doing, as `services up | down | status` report it."""

    name: str
    state: State
    address: str
    pid: int | None = None
    log_file: Path | None = None
    detail: str = ""
    answers: bool = False


def local_services(settings: Settings) -> list[LocalService]:
    """The services statestream knows, in start order."""
    return [KafkaBroker(settings), MosquittoBroker(settings), InfluxServer(settings)]


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
    for service in to_start:
        running[service.name] = spawn(
            service.command(),
            log_file=service.output_file,
            pid_file=service.pid_file,
            cwd=service.home,
        )
    statuses = []
    for service in services:
        if not service.is_local:
            statuses.append(_external_status(service))
            continue
        pid = running[service.name]
        assert pid is not None
        _wait_until_ready(service, pid)
        state: State = "started" if service in to_start else "running"
        statuses.append(_status(service, state, pid, answers=True))
    return statuses


def stop_services(settings: Settings, names: Collection[str] | None = None) -> list[ServiceStatus]:
    """Stop the services this data folder's pid files name (SIGTERM, wait, then SIGKILL).

    `names` limits it to some services, e.g. `{"kafka"}`; processes not ours are never touched.
    """
    statuses = []
    for service in reversed(local_services(settings)):
        if names is not None and service.name not in names:
            continue
        if not service.is_local:
            detail = "not on this machine: nothing to stop"
            statuses.append(ServiceStatus(service.name, "external", service.address, detail=detail))
            continue
        pid = service.running_pid()
        if pid is None:
            service.pid_file.unlink(missing_ok=True)
            statuses.append(_status(service, "not running", None))
            continue
        killed = stop_pid(pid, service.stop_timeout_s)
        service.pid_file.unlink(missing_ok=True)
        detail = "did not stop on SIGTERM: killed" if killed else ""
        statuses.append(_status(service, "stopped", pid, detail))
    return list(reversed(statuses))


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
    return statuses


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
        raise ServiceError(
            f"{service.title} exited during start-up{_hint(service)}; see {service.output_file}"
        )
    if not ready:
        raise ServiceError(
            f"{service.title} (pid {pid}) did not answer on {service.address} within "
            f"{service.start_timeout_s:.0f} s{_hint(service)}; see {service.log_file}, or run "
            "`statestream services down` and `up` again"
        )
    service.after_start()
    problem = service.health()
    if problem is not None:
        raise ServiceError(
            f"{service.title} (pid {pid}) runs but {problem}; see {service.log_file}"
        )


def _hint(service: LocalService) -> str:
    """The last error line of the service's logs, as ': <line>' ('' when there is none)."""
    words = ("ERROR", "Error", "error", "Exception", "FATAL", "fatal")
    for log in (service.output_file, service.log_file):
        for line in reversed(log_tail(log)):
            if any(word in line for word in words):
                return f": {line.strip()[:300]}"
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
        service.name, state, service.address, pid, service.log_file, detail, answers
    )


def _external_status(service: LocalService) -> ServiceStatus:
    """A service on another machine: statestream does not run it, only asks whether it answers."""
    problem = service.health()
    detail = f"not on this machine, not started here; {problem or 'answers'}"
    return ServiceStatus(
        service.name, "external", service.address, detail=detail, answers=not problem
    )
