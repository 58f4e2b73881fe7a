"""Running the vehicle simulation: HFP VP messages to MQTT (as HSL's vehicles publish them), or
straight to Kafka through the connector's vehicle processor.

To MQTT, one connection publishes every message on its own HFP topic. To Kafka, the messages go
through the same route (the vehicle processor, its codec, its topic) as `connect mqtt` gives
them, so the records on `input.vehicle.positions` are the ones the connector would write.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from statestream.codecs.bad_input import now_ms
from statestream.config import Settings
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.ingest.machine_delivery import SimulationResult, Target, publish_to_mqtt
from statestream.ingest.machine_simulator import Pacer
from statestream.ingest.pipeline import routes_pipeline
from statestream.ingest.replay import ReplayConnector
from statestream.ingest.routes import vehicle_route
from statestream.ingest.vehicle_simulator import FeedFaults, timed_vehicle_events, vehicle_events

LIVE: Final = "live"
Rate = float | Literal["live"] | None
"""Messages per second; `LIVE`: each message when a real feed would publish it; None: no limit."""


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

    def live(self) -> LiveSchedule:
        """The messages, each due when a real feed would publish it (starting now)."""
        start = now_ms()
        timed = timed_vehicle_events(
            self.vehicles, self.seed, start, self.duration_s, root=self.root, faults=self.faults
        )
        return LiveSchedule(timed, offset_ms=0)


def run_vehicle_simulation(
    settings: Settings,
    simulation: VehicleSimulation,
    *,
    target: Target = "mqtt",
    rate: Rate = None,
    qos: int = 1,
    topic: str | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> SimulationResult:
    """Send the simulation's messages to `target` at `rate` messages/s (None: as fast as
    possible; `LIVE`: each when a real feed would, event times following the clock). `topic`
    is the Kafka topic with `target="kafka"` (default: settings.topics.vehicle_positions); on
    MQTT each message has its HFP topic."""
    stop = stop or threading.Event()
    live = simulation.live() if rate == LIVE else None
    pacer: Pacer | LiveSchedule = live or Pacer(rate)  # type: ignore[arg-type]
    source: Iterator[tuple[str, bytes]] = live or simulation.messages()
    started = time.monotonic()
    if target == "kafka":
        messages = _CountingMessages(pacer.paced(source), stop)  # type: ignore[arg-type]
        route = vehicle_route(settings, simulation.root + TOPIC_FILTER, topic)
        pipeline = routes_pipeline(settings, [route])
        ReplayConnector.of_messages(messages, on_progress).run(pipeline, stop)
        destination, counts = route.topic, pipeline.counts
    else:
        messages = _CountingMessages(source, stop)
        destination, counts = simulation.root + TOPIC_FILTER, None
        publish_to_mqtt(settings, None, messages, qos, pacer, on_progress)  # type: ignore[arg-type]
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


class LiveSchedule(Iterator[tuple[str, bytes]]):
    """Timed messages (publish ms, topic, payload) as an iterator of (topic, payload) and the
    pacer of their sending: a message is allowed once the clock reaches its publish time."""

    LOOKAHEAD = 1000  # messages read ahead to count those due

    def __init__(self, timed: Iterator[tuple[int, str, bytes]], *, offset_ms: int) -> None:
        self._timed = timed
        self._offset_ms = offset_ms  # added to a publish time to get its wall-clock time
        self._ahead: deque[tuple[int, str, bytes]] = deque()

    def __next__(self) -> tuple[str, bytes]:
        self._fill(1)
        if not self._ahead:
            raise StopIteration
        _, topic, payload = self._ahead.popleft()
        return topic, payload

    def allowed(self, sent: int) -> int:
        """How many messages are due now (`sent` is not needed: the clock decides)."""
        self._fill(self.LOOKAHEAD)
        now, due = now_ms() - self._offset_ms, 0
        for publish_ms, _, _ in self._ahead:
            if publish_ms > now:
                break
            due += 1
        return due if self._ahead else 1  # 1 at the end: lets the sender see it is over

    def wait_s(self, sent: int) -> float:
        """Seconds until the next message is due."""
        self._fill(1)
        if not self._ahead:
            return 0.0
        return max(0.0, (self._ahead[0][0] + self._offset_ms - now_ms()) / 1000)

    def paced(self, messages: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
        """This schedule's messages, each yielded once it is due (`messages`: this schedule)."""
        if messages is not self:
            raise ValueError("a live schedule paces its own messages")
        while True:
            delay = self.wait_s(0)
            if delay > 0:
                time.sleep(delay)
            message = next(self, None)
            if message is None:
                return
            yield message

    def _fill(self, count: int) -> None:
        ahead = self._ahead
        while len(ahead) < count:
            item = next(self._timed, None)
            if item is None:
                return
            ahead.append(item)
