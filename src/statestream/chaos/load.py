"""The steady load of a chaos run: the simulator publishing to MQTT in a thread of the runner,
which keeps every row it published, so the checks know what must arrive.

It publishes the sample's machines cloned into `things` machines, each row stamped with the time
it is sent (`follow_clock`), at QoS 1, through the same `publish_to_mqtt` as `statestream
simulate`: when Mosquitto is killed it connects again and sends once more what the broker had not
acknowledged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from statestream.config import Settings
from statestream.ingest import SAMPLE_FILE
from statestream.ingest.replay import file_lines
from statestream.ingest.simulate import publish_to_mqtt
from statestream.ingest.simulator import Pacer, SimulationPlan


class SimulatorLoad:
    """Publishes until `stop()`; `rows` are the payloads handed to the publisher, in order.

    After `stop()` every one of them was acknowledged by the broker (or `error` says why not).
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
        self.error: Exception | None = None
        self._settings = settings
        self._rate = rate
        self._payloads = plan.payloads()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-simulator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 400.0) -> None:
        """Stop taking rows and wait until the broker acknowledged the ones sent."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            publish_to_mqtt(
                self._settings, self._settings.mqtt.topic, self._kept(), 1, Pacer(self._rate), None
            )
        except Exception as exc:  # reported in the run's report
            self.error = exc

    def _kept(self) -> Iterator[bytes]:
        for payload in self._payloads:
            if self._stop.is_set():
                return
            self.rows.append(payload)
            yield payload
