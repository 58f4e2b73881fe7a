"""The steady load of a chaos run: the simulator publishing to MQTT in a thread of the runner,
which keeps every row it published, so the checks know what must arrive.

It publishes the sample's machines cloned into `things` machines, each row stamped with the time
it is sent (`follow_clock`), at QoS 1, through the same `publish_to_mqtt` as `statestream
simulate`: when Mosquitto is killed it connects again and sends once more what the broker had not
acknowledged. It keeps when the broker acknowledged each row (wall-clock seconds): a row lost
after its acknowledgement is Mosquitto's if the acknowledgement came after Mosquitto's last save
before a kill (`checks.mosquitto_windows`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator

from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE
from statestream.ingest.machine_delivery import publish_to_mqtt
from statestream.ingest.machine_simulator import Pacer, SimulationPlan
from statestream.ingest.replay import file_lines

CATCH_UP_S = 30.0  # how long `stop()` waits for the rows due before it


class SimulatorLoad:
    """Publishes until `stop()`; `rows` are the payloads handed to the publisher, in order.

    Rows that fell behind (the broker was down, or slow to acknowledge) are sent as soon as it
    lets them, as machines that buffer would: `stop()` first lets the publisher catch up with
    every row due before it, for up to `CATCH_UP_S`, so `rate_held` is what the pipeline took.
    After `stop()` every row was acknowledged by the broker (or `error` says why not).
    """

    def __init__(self, settings: Settings, rate: float, things: int, seed: int) -> None:
        plan = SimulationPlan(
            lines=list(file_lines(SAMPLE_FILE)),
            order="time",
            loops=None,
            things=things,
            seed=seed,
            follow_clock=True,
        )
        self.rows: list[bytes] = []
        self.acknowledged_at: list[float] = []  # per row; NaN until the broker acknowledged it
        self.started_at = math.nan  # wall-clock seconds of the first and after the last row
        self.stopped_at = math.nan
        self.error: Exception | None = None
        self._settings = settings
        self._rate = rate
        self._payloads = plan.payloads()
        self._stop = threading.Event()
        self._due = 0  # rows due before `stop()`, sent before the load ends
        self._catch_up_until = math.inf
        self._thread = threading.Thread(target=self._run, name="chaos-simulator", daemon=True)

    def start(self) -> None:
        self.started_at = time.time()
        self._thread.start()

    @property
    def rate_held(self) -> float:
        """Rows/s from the start until `stop()` was called (until now while it runs), the rows
        due before it and sent while catching up included."""
        end = self.stopped_at if not math.isnan(self.stopped_at) else time.time()
        return len(self.rows) / (end - self.started_at) if end > self.started_at else 0.0

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 400.0) -> None:
        """Send the rows due until now (for up to `CATCH_UP_S`), then no more, and wait until
        the broker acknowledged them all."""
        self.stopped_at = time.time()
        self._due = int((self.stopped_at - self.started_at) * self._rate)
        self._catch_up_until = time.monotonic() + CATCH_UP_S
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            publish_to_mqtt(
                self._settings,
                self._settings.mqtt.topic,
                self._kept(),
                1,
                Pacer(self._rate),
                None,
                on_acknowledged=self._acknowledged,
            )
        except Exception as exc:  # reported in the run's report
            self.error = exc

    def _kept(self) -> Iterator[bytes]:
        for payload in self._payloads:
            if self._stop.is_set() and (
                len(self.rows) >= self._due or time.monotonic() > self._catch_up_until
            ):
                return
            self.rows.append(payload)
            self.acknowledged_at.append(math.nan)
            yield payload

    def _acknowledged(self, numbers: list[int]) -> None:
        now = time.time()
        for number in numbers:
            self.acknowledged_at[number] = now
