"""`LocalService`: what statestream needs to know to run one service as a plain process."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from statestream.config import Settings
from statestream.services._process import owned_pid


class LocalService(ABC):
    """One process of a service (Kafka, Mosquitto, InfluxDB, Spark) run by statestream.

    Subclasses generate the process's configuration from the settings, say how to start it and how
    to tell that it answers; `statestream.services.stack` starts, checks and stops them all.
    `name` is the process's own (its pid file, log, folder under the data folder), `service` the
    service it belongs to and `role` what it is in it (`kafka-broker-2`, `spark-worker-1`).
    """

    name: str
    title: str
    service: ClassVar[str]
    start_timeout_s: ClassVar[float] = 30.0
    stop_timeout_s: ClassVar[float] = 20.0
    # processes of a later wave start once the earlier waves answer (Spark workers after the master)
    start_wave: ClassVar[int] = 0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def home(self) -> Path:
        """The folder with this service's configuration and data."""
        return self.settings.paths.data_dir / self.name

    @property
    def role(self) -> str:
        """What this process is in its service (its name unless the service has several)."""
        return self.name

    @property
    def port(self) -> int:
        """The port clients reach this process on (the first of `port_settings`)."""
        return next(iter(self.port_settings()))

    @property
    def pid_file(self) -> Path:
        return self.settings.paths.data_dir / "run" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        """The service's own log."""
        return self.settings.paths.log_dir / f"{self.name}.log"

    @property
    def output_file(self) -> Path:
        """Where the process's stdout and stderr go (the log itself unless the service differs)."""
        return self.log_file

    @property
    @abstractmethod
    def is_local(self) -> bool:
        """True when the settings point at this machine, so statestream runs the service."""

    @property
    @abstractmethod
    def address(self) -> str:
        """Where clients reach the service, e.g. `localhost:9092`."""

    @abstractmethod
    def port_settings(self) -> dict[int, str]:
        """Every port the service listens on, with the environment variable that changes it."""

    @abstractmethod
    def markers(self) -> tuple[str, ...]:
        """Strings in the command line of our process: its program and our configuration file."""

    @abstractmethod
    def check_environment(self) -> None:
        """Raise `EnvironmentProblem` when a program or jar the service needs is missing."""

    @abstractmethod
    def prepare(self) -> None:
        """Write the configuration and initialise the data folder on first start."""

    @abstractmethod
    def command(self) -> list[str]:
        """The command line that runs the service in the foreground."""

    @abstractmethod
    def health(self) -> str | None:
        """None when the service answers with statestream's credentials, else why not."""

    def environment(self) -> dict[str, str]:
        """Environment variables the process needs besides statestream's own (default: none)."""
        return {}

    def answers(self) -> bool:
        """True once a starting service accepts requests (before `after_start`)."""
        return self.health() is None

    def after_start(self) -> None:  # noqa: B027 - optional hook
        """One-time work against the running service, e.g. creating users (default: none)."""

    def running_pid(self) -> int | None:
        """The pid of our running instance, or None."""
        return owned_pid(self.pid_file, self.markers())
