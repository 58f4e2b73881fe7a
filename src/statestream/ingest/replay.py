"""The replay connector: raw events from a file (or any sequence of payloads), straight to Kafka.

It is what `statestream ingest sample` and `statestream simulate [vehicles] --to kafka` use: the
same processors and pipeline as the MQTT connector, without a broker in between. There is no
source to acknowledge to; the run ends when Kafka has confirmed every record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from statestream.codecs.bad_input import now_ms
from statestream.errors import InputError
from statestream.ingest.base import Connector, RawEvent
from statestream.ingest.pipeline import IngestPipeline

POLL_EVERY = 1000  # events between two polls of the producer's delivery reports …
POLL_INTERVAL_S = 0.5  # … or seconds, whichever comes first (a slow replay shows progress)


class ReplayConnector(Connector):
    """Hands each payload of `payloads` to the pipeline as one raw event from `source`."""

    def __init__(
        self,
        payloads: Iterable[bytes],
        source: str,
        on_event: Callable[[int], None] | None = None,
    ) -> None:
        self.payloads = payloads
        self.source = source
        self.on_event = on_event  # called with the number of events handed over so far
        self._messages: Iterable[tuple[str, bytes]] | None = None

    @classmethod
    def of_messages(
        cls, messages: Iterable[tuple[str, bytes]], on_event: Callable[[int], None] | None = None
    ) -> ReplayConnector:
        """One raw event per (source, payload), e.g. simulated MQTT messages with their topics:
        the pipeline routes each by its source as it routes MQTT messages by topic."""
        connector = cls((), "messages", on_event)
        connector._messages = messages
        return connector

    @classmethod
    def from_file(
        cls, path: Path, on_event: Callable[[int], None] | None = None
    ) -> ReplayConnector:
        """One raw event per non-empty line of `path` (its source: the file name)."""
        return cls(file_lines(path), path.name, on_event)

    def run(self, pipeline: IngestPipeline, stop: threading.Event) -> None:
        submitted, next_poll = 0, time.monotonic() + POLL_INTERVAL_S
        source = self.source
        messages = self._messages or ((source, payload) for payload in self.payloads)
        for source, payload in messages:
            if stop.is_set():
                break
            pipeline.submit(RawEvent(payload, source, now_ms()))
            submitted += 1
            if submitted % POLL_EVERY == 0 or time.monotonic() > next_poll:
                next_poll = time.monotonic() + POLL_INTERVAL_S
                pipeline.poll()
                if self.on_event is not None:
                    self.on_event(submitted)
        pipeline.flush()
        if self.on_event is not None:
            self.on_event(submitted)


def file_lines(path: Path) -> Iterator[bytes]:
    """The non-empty lines of a file, without their line ends; `InputError` when unreadable."""
    try:
        with open(path, "rb") as handle:
            for line in handle:
                line = line.rstrip(b"\r\n")
                if line.strip():
                    yield line
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
