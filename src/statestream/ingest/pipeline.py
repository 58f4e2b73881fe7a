"""From raw event to Kafka: check the size, pick the route, run its processor, encode, produce,
track delivery.

A pipeline has one route per use case (`routes`: MQTT topic filter → processor, Kafka topic,
encoding); an event goes to the first route whose filter matches its source topic, or, with a
single route, to that one. Every event ends in Kafka: as its records on its route's topic, or as
one dead-letter record (raw payload, source, reason; `statestream.codecs.bad_input`) when it is too
large, no route takes it or the processor rejects it. `poll` returns the events that are
completely in Kafka, in the order they were submitted, so a connector can acknowledge them to its
source in receipt order.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, Message

from statestream.codecs.bad_input import dead_letter, to_json
from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.base import EventRejected, Processor, RawEvent
from statestream.ingest.kafka_sink import KafkaRecordSink
from statestream.ingest.routes import Route, RouteTable, machine_route, settings_routes

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass
class IngestCounts:
    """What a pipeline has done so far."""

    events: int = 0
    records: int = 0
    rejected: Counter[str] = field(default_factory=Counter)  # by kind of problem
    payload_bytes: int = 0

    @property
    def dead_letters(self) -> int:
        return sum(self.rejected.values())


class _PendingEvent:
    """An event whose records Kafka has not all confirmed yet."""

    __slots__ = ("error", "remaining", "token")

    def __init__(self, token: object, remaining: int) -> None:
        self.token = token
        self.remaining = remaining
        self.error: str | None = None

    def delivered(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self.error = self.error or error.str()
        else:
            self.remaining -= 1


class IngestPipeline:
    """Routes (processor, topic, encoding) and one Kafka sink, shared by whatever connector
    feeds it."""

    def __init__(
        self,
        routes: Sequence[Route],
        sink: KafkaRecordSink,
        dead_letter_topic: str,
        *,
        max_payload_bytes: int,
        dead_letter_raw_bytes: int,
    ) -> None:
        if not routes:
            raise ValueError("a pipeline needs at least one route")
        self.routes = RouteTable(routes)
        self._single_route = routes[0] if len(routes) == 1 else None
        self.sink = sink
        self.dead_letter_topic = dead_letter_topic
        self.max_payload_bytes = max_payload_bytes
        self.dead_letter_raw_bytes = dead_letter_raw_bytes
        self.counts = IngestCounts()
        self._pending: deque[_PendingEvent] = deque()

    def submit(self, event: RawEvent, token: object = None) -> None:
        """Process one event and queue its records (or its dead-letter record) for Kafka."""
        counts = self.counts
        counts.events += 1
        counts.payload_bytes += len(event.payload)
        try:
            if len(event.payload) > self.max_payload_bytes:
                raise EventRejected(
                    "oversize",
                    f"payload of {len(event.payload):,} bytes exceeds the limit of "
                    f"{self.max_payload_bytes:,} bytes",
                )
            route = self._single_route or self._route_of(event.source)
            records = route.processor.process(event)
        except EventRejected as rejected:
            self._dead_letter(event, rejected, token)
            return
        pending = _PendingEvent(token, len(records))
        self._pending.append(pending)
        self.sink.produce_all(
            route.topic, route.encode(records, event.received_ms), pending.delivered
        )
        counts.records += len(records)

    @property
    def processors(self) -> list[Processor]:
        """The processor of each route, in route order."""
        return [route.processor for route in self.routes.routes]

    @property
    def record_topics(self) -> list[str]:
        """The Kafka topic of each route, in route order."""
        return [route.topic for route in self.routes.routes]

    @property
    def topic_filters(self) -> list[str]:
        """The MQTT topic filter of each route: what a connector subscribes to."""
        return [route.topic_filter for route in self.routes.routes]

    def poll(self, timeout_s: float = 0.0) -> list[object]:
        """Tokens of the events now completely in Kafka, oldest first.

        Raises `ServiceError` when Kafka failed to take a record: that event (and every later
        one) is then never reported done, so its source sends it again after a restart.
        """
        self.sink.poll(timeout_s)
        return self._done()

    def flush(self, timeout_s: float = 60.0) -> list[object]:
        """Wait until Kafka has every queued record; the tokens of the events now done."""
        remaining = self.sink.flush(timeout_s)
        done = self._done()
        if remaining or self._pending:
            raise ServiceError(
                f"Kafka did not confirm {remaining:,} records within {timeout_s:.0f} s; "
                f"{len(self._pending):,} events stay unacknowledged and will be received again"
            )
        return done

    @property
    def in_flight(self) -> int:
        """Events submitted whose records Kafka has not all confirmed yet."""
        return len(self._pending)

    def _done(self) -> list[object]:
        pending, done = self._pending, []
        while pending and pending[0].remaining == 0:
            done.append(pending.popleft().token)
        if pending and pending[0].error:
            raise ServiceError(
                f"Kafka did not take a record ({pending[0].error}); the connector stops without "
                "acknowledging it, so the source sends it again"
            )
        return done

    def _route_of(self, source: str) -> Route:
        route = self.routes.route_of(source)
        if route is None:
            raise EventRejected("unrouted", f"no processor for MQTT topic {source!r}")
        return route

    def _dead_letter(self, event: RawEvent, rejected: EventRejected, token: object) -> None:
        self.counts.rejected[rejected.kind] += 1
        pending = _PendingEvent(token, 1)
        self._pending.append(pending)
        value = dead_letter_value(event, rejected, self.dead_letter_raw_bytes)
        self.sink.produce(self.dead_letter_topic, event.source.encode(), value, pending.delivered)


def dead_letter_value(event: RawEvent, rejected: EventRejected, raw_limit: int) -> bytes:
    """The dead letter of a rejected event (`statestream.codecs.bad_input`), stage "ingest".

    No partition or offset (an MQTT message has none); `ingested_at` is the receive time and the
    stage's own field `kind` the rule the event broke.
    """
    record = dead_letter(
        "ingest",
        rejected.reason,
        event.payload,
        source_topic=event.source,
        ingested_at=event.received_ms,
        raw_limit=raw_limit,
        kind=rejected.kind,
    )
    return to_json(record).encode()


def machine_data_pipeline(
    settings: Settings,
    *,
    records_topic: str | None = None,
    dead_letter_topic: str | None = None,
) -> IngestPipeline:
    """The machine pipeline: machine rows on mqtt.topic → records on machine.data (or
    `records_topic`), envelope as set.

    `ServiceError` when a topic does not exist (it is not created implicitly with other configs).
    """
    route = machine_route(settings, settings.mqtt.topic, records_topic)
    return routes_pipeline(settings, [route], dead_letter_topic=dead_letter_topic)


def connector_pipeline(settings: Settings) -> IngestPipeline:
    """The pipeline of `connect mqtt`: one route per entry of `ingest.processors`."""
    return routes_pipeline(settings, settings_routes(settings))


def routes_pipeline(
    settings: Settings, routes: Sequence[Route], *, dead_letter_topic: str | None = None
) -> IngestPipeline:
    """A pipeline of `routes` with the settings' Kafka producer, limits and dead-letter topic.

    `ServiceError` when a topic does not exist (it is not created implicitly with other configs).
    """
    ingest = settings.ingest
    dead_letters = dead_letter_topic or settings.topics.dead_letter
    sink = KafkaRecordSink(settings, linger_ms=ingest.linger_ms, compression=ingest.compression)
    for topic in dict.fromkeys([*(route.topic for route in routes), dead_letters]):
        sink.partitions(topic)
    return IngestPipeline(
        routes,
        sink,
        dead_letters,
        max_payload_bytes=ingest.max_payload_bytes,
        dead_letter_raw_bytes=ingest.dead_letter_raw_bytes,
    )
