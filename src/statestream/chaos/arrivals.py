"""The end of a chaos run's load: waiting until the connector has brought to Kafka everything
the simulators published (what Mosquitto still held when they stopped), reading each topic as it
grows, each record once."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from statestream.config import Settings
from statestream.exactly_once.read import TopicFollower

FORWARD_IDLE_S = 180.0  # the longest wait for the connector's next record on Kafka


@dataclass(frozen=True)
class Awaited:
    """What `topic` still lacks (`missing`: the keys of records, emptied as they come) and the
    key of one of its values."""

    topic: str
    missing: set[Hashable]
    key: Callable[[bytes], Hashable]


def wait_for_arrivals(
    settings: Settings, awaited: Sequence[Awaited], meanwhile: Callable[[], object]
) -> None:
    """Until every awaited record is on its topic, or until no record came for
    `FORWARD_IDLE_S` (the checks then count what is missing); `meanwhile` runs before each
    read (the runner starts a connector again that ended)."""
    followers = [(TopicFollower(settings, wait.topic), wait) for wait in awaited]
    moved = time.monotonic()
    try:
        while any(w.missing for w in awaited) and time.monotonic() - moved < FORWARD_IDLE_S:
            meanwhile()
            came = False
            for follower, wait in followers:
                new = follower.new_records(wait_s=5.0) if wait.missing else []
                wait.missing.difference_update(wait.key(value) for _, _, value in new)
                came = came or bool(new)
            if came:
                moved = time.monotonic()
            else:
                time.sleep(0.5)
    finally:
        for follower, _ in followers:
            follower.close()
