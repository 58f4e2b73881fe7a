"""The steady load of a chaos run: simulators publishing to MQTT in threads of the runner, each
keeping every message it published, so the checks know what must arrive.

`SimulatorLoad` publishes the sample's machines cloned into `things` machines, each row stamped
with the time it is sent (`follow_clock`), on the run's MQTT topic. `VehicleLoad` publishes
`vehicles` simulated buses and trams, one HFP position per vehicle and second, each on its own
HFP topic under the run's root; its feed is a perfect one (`FeedFaults.none()`: no duplicates,
no disorder, no tunnels, always a fix), so that what reaches Kafka late or twice is the kills'
doing. Both publish at QoS 1 through the same `publish_to_mqtt` as `statestream simulate`: when
Mosquitto is killed they connect again and send once more what the broker had not acknowledged.
Each keeps its messages compressed (`message_log`: an hour's soak holds millions) and when the
broker acknowledged each (wall-clock seconds, a flat array of doubles): a message lost after its
acknowledgement is Mosquitto's if the acknowledgement came after Mosquitto's last save before a
kill (`loss_window`).

At the end, `close_the_windows` writes one position without a fix, of a vehicle of its own, a
window and the disorder ahead, straight to the positions topic: the closing `run pipeline
--available-now` then has geo input, and after its batch Spark runs one without data under the
watermark that position raised, which makes every window of the run final (a query restarted
with no new input runs no batch, and windows its last streaming batch had not closed yet would
stay open: `queries.geo.verify` compares the final windows).
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections.abc import Iterator
from typing import Generic, TypeVar

from confluent_kafka import Producer

from statestream.chaos.message_log import MessageLog
from statestream.codecs.bad_input import now_ms
from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest import SAMPLE_FILE
from statestream.ingest.machine_delivery import publish_to_mqtt
from statestream.ingest.machine_simulator import Pacer, SimulationPlan
from statestream.ingest.replay import file_lines
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.ingest.vehicle_simulator import FeedFaults, vehicle_events

CATCH_UP_S = 30.0  # how long `stop()` waits for the messages due before it
DRIVING_S = 10 * 24 * 3600  # the vehicles' simulation: longer than any run, cut by `stop()`
CLOSER = (99, 99_999, "chaos-closer")  # oper, veh and route of the closing position
CLOSER_AHEAD_MS = 5_000  # beyond a window and the disorder after now
Message = TypeVar("Message", bytes, tuple[str, bytes])


class PublishingLoad(Generic[Message]):
    """Publishes `source` at `rate` messages/s until `stop()`; `messages` are those handed to the
    publisher, in order (payloads on `topic`, or (topic, payload) when `topic` is None).

    Messages that fell behind (the broker was down, or slow to acknowledge) are sent as soon as
    it lets them, as machines and vehicles that buffer would: `stop()` first lets the publisher
    catch up with every message due before it, for up to `CATCH_UP_S`, so `rate_held` is what
    the pipeline took. After `stop()` every message was acknowledged by the broker (or `error`
    says why not).
    """

    def __init__(
        self, settings: Settings, topic: str | None, source: Iterator[Message], rate: float
    ) -> None:
        self.messages: MessageLog[Message] = MessageLog()
        self.acknowledged_at = array("d")  # per message; NaN until the broker acknowledged
        self.started_at = math.nan  # wall-clock seconds of the first and after the last message
        self.stopped_at = math.nan
        self.error: Exception | None = None
        self._settings = settings
        self._topic = topic
        self._source: Iterator[Message] = source
        self.rate = rate
        self._stop = threading.Event()
        self._due = 0  # messages due before `stop()`, sent before the load ends
        self._catch_up_until = math.inf
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    def start(self) -> None:
        self.started_at = time.time()
        self._thread.start()

    @property
    def rate_held(self) -> float:
        """Messages/s from the start until `stop()` was called (until now while it runs), the
        messages due before it and sent while catching up included."""
        end = self.stopped_at if not math.isnan(self.stopped_at) else time.time()
        return len(self.messages) / (end - self.started_at) if end > self.started_at else 0.0

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 400.0) -> None:
        """Send the messages due until now (for up to `CATCH_UP_S`), then no more, and wait
        until the broker acknowledged them all."""
        self.request_stop()
        self.join(timeout_s)

    def request_stop(self) -> None:
        """`stop()` without the wait: several loads stop at the same moment, then `join`."""
        self.stopped_at = time.time()
        self._due = int((self.stopped_at - self.started_at) * self.rate)
        self._catch_up_until = time.monotonic() + CATCH_UP_S
        self._stop.set()

    def join(self, timeout_s: float = 400.0) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            publish_to_mqtt(
                self._settings,
                self._topic,
                self._kept(),
                1,
                Pacer(self.rate),
                None,
                on_acknowledged=self._acknowledged,
            )
        except Exception as exc:  # reported in the run's report
            self.error = exc

    def _kept(self) -> Iterator[Message]:
        for message in self._source:
            if self._stop.is_set() and (
                len(self.messages) >= self._due or time.monotonic() > self._catch_up_until
            ):
                return
            self.messages.append(message)
            self.acknowledged_at.append(math.nan)
            yield message

    def _acknowledged(self, numbers: list[int]) -> None:
        now = time.time()
        for number in numbers:
            self.acknowledged_at[number] = now


class SimulatorLoad(PublishingLoad[bytes]):
    """The machines: `rate` rows/s of the sample cloned into `things` machines, on the
    settings' MQTT topic; `rows` are the payloads published."""

    def __init__(self, settings: Settings, rate: float, things: int, seed: int) -> None:
        plan = SimulationPlan(
            lines=list(file_lines(SAMPLE_FILE)),
            order="time",
            loops=None,
            things=things,
            seed=seed,
            follow_clock=True,
        )
        super().__init__(settings, settings.mqtt.topic, plan.payloads(), rate)

    @property
    def rows(self) -> MessageLog[bytes]:
        return self.messages


class VehicleLoad(PublishingLoad[tuple[str, bytes]]):
    """The vehicles: `vehicles` buses and trams, one position each per second (the rate), each
    on its HFP topic under `root`; `messages` are the (topic, payload) published. The
    simulation starts when the first message is taken, so its event times follow the clock."""

    def __init__(self, settings: Settings, vehicles: int, seed: int, root: str) -> None:
        source = vehicle_events(
            vehicles, seed, None, DRIVING_S, root=root, faults=FeedFaults.none()
        )
        super().__init__(settings, None, source, float(vehicles))


def close_the_windows(settings: Settings) -> VehiclePosition:
    """Write the closing position (see the module) to the positions topic; returns it."""
    now = now_ms()
    closer = closing_position(settings, now)
    value = vehicle_codec_for(settings.ingest.envelope).encode(closer, now)
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    producer.produce(settings.topics.vehicle_positions, key=closer.key, value=value)
    if producer.flush(60):
        raise ServiceError("the closing position did not reach the positions topic in 60 s")
    return closer


def closing_position(settings: Settings, now: int) -> VehiclePosition:
    """The closing position at `now` (epoch ms): no fix, a window and the disorder ahead."""
    geo = settings.geo
    ahead_ms = round((geo.window_s + geo.disorder_s) * 1000) + CLOSER_AHEAD_MS
    oper, veh, route = CLOSER
    return VehiclePosition(oper, veh, now + ahead_ms, "bus", route, 1, "", None, None, None,
                           None, None, None, None, None, None, "00:00", "1970-01-01")  # fmt: skip
