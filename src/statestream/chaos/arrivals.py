"""The end of a chaos run's load: waiting until the connector has brought to Kafka everything
the simulators published (what Mosquitto still held when they stopped), reading each topic as it
grows, each record once.

The records awaited are 64-bit keys (`keys`) in a sorted array with a flag each: an hour's soak
awaits tens of millions, which a set of Python integers would hold in gigabytes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from statestream.config import Settings
from statestream.exactly_once.read import TopicFollower

FORWARD_IDLE_S = 180.0  # the longest wait for the connector's next record on Kafka


class Awaited:
    """The records `topic` must hold (`expected`: their keys) and the key of one of its values;
    `missing` counts those not seen yet.

    >>> wait = Awaited("t", np.array([3, 1, 2, 3]), int)
    >>> wait.missing
    3
    >>> wait.seen([b"2", b"9", b"2"])
    >>> wait.missing
    2
    """

    def __init__(self, topic: str, expected: np.ndarray, key: Callable[[bytes], int]) -> None:
        self.topic = topic
        self.key = key
        self._expected = np.unique(np.asarray(expected, np.int64))
        self._seen = np.zeros(len(self._expected), bool)
        self.missing = len(self._expected)

    def seen(self, values: Sequence[bytes]) -> None:
        """Note the records of `values` (others than the awaited ones are passed over)."""
        if not values or not len(self._expected):
            return
        keys = np.fromiter((self.key(v) for v in values), np.int64, len(values))
        at = np.minimum(np.searchsorted(self._expected, keys), len(self._expected) - 1)
        found = np.unique(at[self._expected[at] == keys])
        new = found[~self._seen[found]]
        self._seen[new] = True
        self.missing -= len(new)


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
                wait.seen([value for _, _, value in new])
                came = came or bool(new)
            if came:
                moved = time.monotonic()
            else:
                time.sleep(0.5)
    finally:
        for follower, _ in followers:
            follower.close()
