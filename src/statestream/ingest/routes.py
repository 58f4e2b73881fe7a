"""Which processor takes a message, and where its records go: routes chosen by MQTT topic filter.

One connector serves every use case: `settings.ingest.processors` maps MQTT topic filters to
processor kinds, e.g. `{"machine/states": "machine", "/hfp/v2/journey/ongoing/vp/#":
"vehicles"}`. Each becomes a `Route` (filter, processor, Kafka topic, encoder of its records);
the connector subscribes to every filter and the pipeline gives each message to the first route
whose filter matches its topic. A new use case is a new entry in `PROCESSOR_KINDS`, never a
change to a connector.

    >>> TopicFilter("/hfp/v2/journey/ongoing/vp/#").matches("/hfp/v2/journey/ongoing/vp/bus/x")
    True
    >>> TopicFilter("machine/+").matches("machine/states/extra")
    False
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from statestream.errors import ConfigError
from statestream.ingest.base import MachineRecord, Processor
from statestream.ingest.envelope import codec_for
from statestream.ingest.hfp import TOPIC_FILTER, VehiclePositionProcessor
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for

if TYPE_CHECKING:
    from statestream.config import Settings

RecordsEncoder = Callable[[Sequence[Any], int], list[tuple[bytes | None, bytes]]]
"""A processor's records and their ingestion time (epoch ms) → Kafka (key, value) pairs."""


class TopicFilter:
    """An MQTT topic filter: `+` stands for one level, a final `#` for any number of levels
    (the parent level included); a wildcard never matches a topic that starts with `$`."""

    def __init__(self, text: str) -> None:
        levels = text.split("/")
        if not text or any(
            ("#" in level and (level != "#" or index != len(levels) - 1))
            or ("+" in level and level != "+")
            for index, level in enumerate(levels)
        ):
            raise ConfigError(f"{text!r} is not an MQTT topic filter")
        self.text = text
        multi_level = levels[-1] == "#"
        exact = levels[:-1] if multi_level else levels
        pattern = "/".join("[^/]*" if level == "+" else re.escape(level) for level in exact)
        if multi_level:
            pattern = pattern + "(?:/.*)?" if exact else ".*"
        self._pattern = re.compile(pattern, re.S)
        self._wildcard_first = levels[0] in ("+", "#")

    def matches(self, topic: str) -> bool:
        """Whether a message on `topic` is one this filter subscribes to."""
        if self._wildcard_first and topic.startswith("$"):
            return False
        return self._pattern.fullmatch(topic) is not None

    def __repr__(self) -> str:
        return f"TopicFilter({self.text!r})"


@dataclass(frozen=True)
class Route:
    """The records of messages on `topic_filter`: made by `processor`, encoded by `encode`,
    written to the Kafka topic `topic`."""

    topic_filter: str
    processor: Processor
    topic: str
    encode: RecordsEncoder
    kind: str = "machine"


def machine_route(settings: Settings, topic_filter: str, topic: str | None = None) -> Route:
    """Machine rows → `MachineRecord`s on machine.data, key `thing.quantity`."""
    encode = codec_for(settings.ingest.envelope).encode

    def encoded(
        records: Sequence[MachineRecord], received: int
    ) -> list[tuple[bytes | None, bytes]]:
        return [(_machine_key(r.thing, r.quantity), encode(r, received)) for r in records]

    return Route(
        topic_filter,
        MachineRowProcessor(),
        topic or settings.topics.machine_data,
        encoded,
        "machine",
    )


def vehicle_route(settings: Settings, topic_filter: str, topic: str | None = None) -> Route:
    """HFP VP events → `VehiclePosition`s on input.vehicle.positions, key `oper/veh`."""
    encode = vehicle_codec_for(settings.ingest.envelope).encode

    def encoded(
        records: Sequence[VehiclePosition], received: int
    ) -> list[tuple[bytes | None, bytes]]:
        return [(f"{r.oper}/{r.veh}".encode(), encode(r, received)) for r in records]

    return Route(
        topic_filter,
        VehiclePositionProcessor(),
        topic or settings.topics.vehicle_positions,
        encoded,
        "vehicles",
    )


PROCESSOR_KINDS: dict[str, Callable[[Settings, str], Route]] = {
    "machine": machine_route,
    "vehicles": vehicle_route,
}
"""The processor kinds a topic filter of `ingest.processors` may name."""


def processor_filters(settings: Settings) -> dict[str, str]:
    """`ingest.processors`, or by default `mqtt.topic` → machine and the HFP VP filter →
    vehicles."""
    configured = settings.ingest.processors
    if configured is not None:
        return dict(configured)
    return {settings.mqtt.topic: "machine", TOPIC_FILTER: "vehicles"}


def settings_routes(settings: Settings) -> list[Route]:
    """One route per entry of `processor_filters(settings)`, in their order."""
    routes = []
    for topic_filter, kind in processor_filters(settings).items():
        TopicFilter(topic_filter)  # a bad filter is a ConfigError here, not at subscription
        make = PROCESSOR_KINDS.get(kind)
        if make is None:
            raise ConfigError(
                f"ingest.processors: unknown processor {kind!r} for {topic_filter!r}; "
                f"one of {', '.join(PROCESSOR_KINDS)}"
            )
        routes.append(make(settings, topic_filter))
    if not routes:
        raise ConfigError("ingest.processors is empty: the connector would receive nothing")
    return routes


class RouteTable:
    """The route of each message topic: the first route whose filter matches it."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self.routes = list(routes)
        self._filters = [(TopicFilter(r.topic_filter), r) for r in self.routes]
        self.route_of = lru_cache(maxsize=4096)(self._find)

    def _find(self, topic: str) -> Route | None:
        for topic_filter, route in self._filters:
            if topic_filter.matches(topic):
                return route
        return None


@lru_cache(maxsize=65_536)
def _machine_key(thing: str, quantity: str) -> bytes:
    """The Kafka key `thing.quantity` of a record (cached: the same series come again)."""
    return f"{thing}.{quantity}".encode()
