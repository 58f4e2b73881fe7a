"""The two abstractions of ingestion: a *Connector* receives raw events from an external source,
a *Processor* turns one raw event into zero or more records.

A connector knows its source (an MQTT subscription, a file) and nothing of what the bytes mean; a
processor knows one kind of payload and nothing of where it came from. So a new processor needs no
change to any connector, and one processor serves every connector:

    pipeline = connector_pipeline(settings)   # a route per use case: topic filter → processor
    MqttConnector(settings, topics=pipeline.topic_filters).run(pipeline, stop)
    # or ReplayConnector(lines, "file").run(machine_data_pipeline(settings), stop)
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from statestream.ingest.pipeline import IngestPipeline


class RawEvent(NamedTuple):
    """What a connector received, as it received it: the payload, where from and when."""

    payload: bytes
    source: str  # e.g. the MQTT topic or the file name
    received_ms: int  # epoch ms: the ingestion time


class MachineRecord(NamedTuple):
    """One value of one quantity of one thing at one time (the `machine.data` record)."""

    thing: str
    quantity: str
    phenomenon_time_ms: int | float
    result: float

    @property
    def key(self) -> str:
        """The Kafka key `thing.quantity`: one series stays in one partition, in order."""
        return f"{self.thing}.{self.quantity}"


class EventRejected(Exception):
    """A raw event a processor cannot turn into records; it goes to the dead-letter topic.

    `kind` is a short name of the rule it broke (counted per kind), the message is the reason.
    """

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind

    @property
    def reason(self) -> str:
        return str(self)


class Processor(ABC):
    """Turns one raw event into zero or more records (filters, timestamp extraction, mapping):
    `MachineRecord`s, `VehiclePosition`s, … — its route (`routes.Route`) encodes them."""

    @abstractmethod
    def process(self, event: RawEvent) -> Sequence[Any]:
        """The records of `event`; raises `EventRejected` with the reason when it has none."""

    def notes(self) -> list[str]:
        """What is worth a word in a summary besides the counts (e.g. "12 Timestamps
        normalised to ms"); none by default."""
        return []


class Connector(ABC):
    """Receives raw events from one external source and hands each to an `IngestPipeline`.

    The connector acknowledges an event to its source only once the pipeline reports all of the
    event's records (or its dead-letter record) safely in Kafka, so a crash means redelivery,
    never loss.
    """

    @abstractmethod
    def run(self, pipeline: IngestPipeline, stop: threading.Event) -> None:
        """Receive until the source ends or `stop` is set, then flush the pipeline."""
