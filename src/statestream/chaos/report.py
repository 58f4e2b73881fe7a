"""What a chaos run is asked to do (`ChaosOptions`) and what it reports (`ChaosReport`, and its
JSON: the options, the kills, the samples, every figure of the checks, the problems)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Literal

from statestream.chaos.checks import ChaosChecks
from statestream.chaos.parts import PartCounts
from statestream.chaos.soak import Sample

MqttSaves = Literal["schedule", "every-change"]


@dataclass(frozen=True)
class ChaosOptions:
    minutes: float = 20.0
    seed: int = 0
    rate: float = 20.0  # rows/s of the simulator, all machines
    things: int = 6
    mqtt_saves: MqttSaves = "schedule"  # Mosquitto's save schedule, or after every change
    kills: int | None = None  # at most this many of the schedule's kills (0: a soak)
    vehicles: int = 0  # simulated vehicles, one position each a second (0: machines only)


@dataclass
class ChaosReport:
    """What a run did (kills per component) and what it found."""

    options: ChaosOptions
    workspace: str = ""
    counts: dict[str, PartCounts] = field(default_factory=dict)
    checks: ChaosChecks | None = None
    rate_held: float = 0.0  # rows/s the simulator published while the kills went on
    vehicle_rate_held: float = 0.0  # positions/s the vehicle simulator published meanwhile
    samples: list[Sample] = field(default_factory=list)  # one a minute
    problems: list[str] = field(default_factory=list)  # what kept the run from finishing

    @property
    def kills(self) -> int:
        return sum(c.kills for c in self.counts.values())

    @property
    def passed(self) -> bool:
        return self.checks is not None and self.checks.passed and not self.problems

    def to_json(self) -> dict[str, object]:
        names = [f.name for f in fields(ChaosChecks)]  # null when the run ended before
        checks = {name: getattr(self.checks, name, None) for name in names}
        windows = self.checks.mosquitto_windows if self.checks else ()
        checks["mosquitto_windows"] = [window.to_json() for window in windows]
        queries = self.checks.queries if self.checks else {}
        checks["queries"] = {name: asdict(check) for name, check in queries.items()}
        vehicles = self.checks.vehicles if self.checks else None
        checks["vehicles"] = vehicles.to_json() if vehicles is not None else None
        return {
            "passed": self.passed,
            "seed": self.options.seed,
            "minutes": self.options.minutes,
            "rate_asked": self.options.rate,
            "rate_held": round(self.rate_held, 1),
            "vehicles_asked": self.options.vehicles,
            "vehicle_rate_held": round(self.vehicle_rate_held, 1),
            "mqtt_saves": self.options.mqtt_saves,
            "samples": [sample.to_json() for sample in self.samples],
            "kills": self.kills,
            "kills_by_component": {name: c.kills for name, c in self.counts.items()},
            "components": {name: c.to_json() for name, c in self.counts.items()},
            **checks,
            "problems": self.problems,
            "workspace": self.workspace,
        }
