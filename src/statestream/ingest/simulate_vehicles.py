"""Running the vehicle simulation: HFP VP messages to MQTT (as HSL's vehicles publish them), or
straight to Kafka through the connector's vehicle processor.

To MQTT, one connection publishes every message on its own HFP topic. To Kafka, the messages go
through the same route (the vehicle processor, its codec, its topic) as `connect mqtt` gives
them, so the records on `input.vehicle.positions` are the ones the connector would write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from statestream.config import Settings
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.ingest.pipeline import routes_pipeline
from statestream.ingest.replay import ReplayConnector
from statestream.ingest.routes import vehicle_route
from statestream.ingest.simulate import SimulationResult, Target, publish_to_mqtt
from statestream.ingest.simulator import Pacer
from statestream.ingest.vehicle_simulator import FeedFaults, vehicle_events


@dataclass(frozen=True)
class VehicleSimulation:
    """What to simulate: how many vehicles, for how long, from which seed and start time."""

    vehicles: int = 50
    duration_s: float = 300.0
    seed: int = 0
    start_ms: int | None = None  # None: now
    root: str = ""  # put before /hfp in every topic (a test's own namespace)
    faults: FeedFaults | None = None  # None: the real feed's faults

    def messages(self) -> Iterator[tuple[str, bytes]]:
        """Every (topic, payload) of the simulation, in publishing order."""
        return vehicle_events(
            self.vehicles,
            self.seed,
            self.start_ms,
            self.duration_s,
            root=self.root,
            faults=self.faults,
        )


def run_vehicle_simulation(
    settings: Settings,
    simulation: VehicleSimulation,
    *,
    target: Target = "mqtt",
    rate: float | None = None,
    qos: int = 1,
    topic: str | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> SimulationResult:
    """Send the simulation's messages to `target` at `rate` messages/s (None: as fast as
    possible). `topic` is the Kafka topic with `target="kafka"` (default:
    settings.topics.vehicle_positions); on MQTT each message has its HFP topic."""
    stop = stop or threading.Event()
    pacer = Pacer(rate)
    started = time.monotonic()
    if target == "kafka":
        messages = _CountingMessages(pacer.paced(simulation.messages()), stop)  # type: ignore[arg-type]
        route = vehicle_route(settings, simulation.root + TOPIC_FILTER, topic)
        pipeline = routes_pipeline(settings, [route])
        ReplayConnector.of_messages(messages, on_progress).run(pipeline, stop)
        destination, counts = route.topic, pipeline.counts
    else:
        messages = _CountingMessages(simulation.messages(), stop)
        destination, counts = simulation.root + TOPIC_FILTER, None
        publish_to_mqtt(settings, None, messages, qos, pacer, on_progress)
    return SimulationResult(
        target,
        destination,
        messages.rows,
        messages.payload_bytes,
        time.monotonic() - started,
        counts,
    )


class _CountingMessages(Iterator[tuple[str, bytes]]):
    """Counts the messages that pass through; ends early once `stop` is set."""

    def __init__(self, messages: Iterator[tuple[str, bytes]], stop: threading.Event) -> None:
        self._messages = messages
        self._stop = stop
        self.rows = 0
        self.payload_bytes = 0

    def __next__(self) -> tuple[str, bytes]:
        if self._stop.is_set():
            raise StopIteration
        topic, payload = next(self._messages)
        self.rows += 1
        self.payload_bytes += len(payload)
        return topic, payload
