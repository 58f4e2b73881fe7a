"""A read_committed consumer in a thread that notes when each pair becomes visible."""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer

from statestream.config import Settings
from statestream.services._process import wait_until

POLL_MESSAGES = 1_000


class PairWatcher:
    """Reads `topic` from its beginning, read_committed; each value with the time it was seen."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self._consumer = Consumer(
            {
                **settings.kafka.client_config(),
                "group.id": f"bench-watch-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
                # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (1 s)
                # when its queue holds queued.min.messages (100,000): a burst's partition may
                # hold more, and its last pairs were then seen ~1 s late
                "queued.min.messages": 1_000_000,
                "fetch.queue.backoff.ms": 10,
            }
        )
        self._consumer.subscribe([topic])
        self._chunks: list[tuple[float, list[bytes]]] = []  # (when seen, values) per poll
        self._count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pair-watcher", daemon=True)

    @property
    def count(self) -> int:
        return self._count

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()

    def received(self) -> list[tuple[float, bytes]]:
        """(epoch seconds when seen, value) of every pair so far, in the order seen."""
        return [(at, value) for at, values in list(self._chunks) for value in values]

    def wait_for(self, count: int, timeout_s: float) -> bool:
        """Wait until `count` pairs were seen; False if `timeout_s` passed first."""
        return wait_until(lambda: self.count >= count, timeout_s, interval_s=0.01)

    def _run(self) -> None:
        while not self._stop.is_set():
            # ~1,000 at a time: a consumer asked for 10,000 per call drained a 250 k release
            # ~2.5x slower here (~0.4 s against ~0.16 s), and the watcher's lag was measured
            # as the pipeline's; one list per poll, not a tuple per pair, for the same reason
            messages = self._consumer.consume(POLL_MESSAGES, timeout=0.05)
            now = time.time()
            values = [m.value() for m in messages if m.error() is None]
            if values:
                self._chunks.append((now, values))
                self._count += len(values)
