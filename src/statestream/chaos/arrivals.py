"""The end of a chaos run's load: waiting until the connector has brought to Kafka everything
the simulators published (what Mosquitto still held when they stopped), reading each topic as it
grows, each record once.

The records awaited are 64-bit keys (`keys`) in a sorted array with a flag each: an hour's soak
awaits tens of millions, which a set of Python integers would hold in gigabytes.

A record of a row that Mosquitto acknowledged inside one of its kills' loss windows
(`loss_window`) may never come: the kill may have taken it. The wait ends once every other
record came and none came for `AT_RISK_IDLE_S`, instead of idling `FORWARD_IDLE_S` for records
that died with the broker; the checks count them per kill."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from statestream.config import Settings
from statestream.exactly_once.read import TopicFollower

FORWARD_IDLE_S = 180.0  # the longest wait for the connector's next record on Kafka
AT_RISK_IDLE_S = 30.0  # the same, once only records a Mosquitto kill may have taken are missing


class Awaited:
    """The records `topic` must hold (`expected`: their keys) and the key of one of its values;
    `missing` counts those not seen yet. `at_risk` (a flag per expected key) marks the records
    a Mosquitto kill may have taken: `missing_at_risk` counts those, apart (a key expected both
    at risk and not is awaited as sure to come).

    >>> wait = Awaited("t", np.array([3, 1, 2, 3, 4]), int, np.array([0, 0, 0, 1, 1], bool))
    >>> wait.missing, wait.missing_at_risk
    (3, 1)
    >>> wait.seen([b"2", b"9", b"2", b"4"])
    >>> wait.missing, wait.missing_at_risk
    (2, 0)
    """

    def __init__(
        self,
        topic: str,
        expected: np.ndarray,
        key: Callable[[bytes], int],
        at_risk: np.ndarray | None = None,
    ) -> None:
        self.topic = topic
        self.key = key
        expected = np.asarray(expected, np.int64)
        risky = np.zeros(len(expected), bool) if at_risk is None else np.asarray(at_risk, bool)
        self._expected = np.unique(expected)
        self._sure = np.isin(self._expected, expected[~risky])
        self._seen = np.zeros(len(self._expected), bool)
        self.missing = int(self._sure.sum())
        self.missing_at_risk = len(self._expected) - self.missing

    @property
    def waiting(self) -> bool:
        """Whether any awaited record, sure or at risk, has not come yet."""
        return bool(self.missing or self.missing_at_risk)

    def seen(self, values: Sequence[bytes]) -> None:
        """Note the records of `values` (others than the awaited ones are passed over)."""
        if not values or not len(self._expected):
            return
        keys = np.fromiter((self.key(v) for v in values), np.int64, len(values))
        at = np.minimum(np.searchsorted(self._expected, keys), len(self._expected) - 1)
        found = np.unique(at[self._expected[at] == keys])
        new = found[~self._seen[found]]
        self._seen[new] = True
        sure = int(self._sure[new].sum())
        self.missing -= sure
        self.missing_at_risk -= len(new) - sure


def idle_limit(awaited: Sequence[Awaited]) -> float:
    """How long the wait goes on with no record coming: `FORWARD_IDLE_S` while a record sure
    to come is missing, `AT_RISK_IDLE_S` when only records at risk are, 0 when none is.

    >>> sure = Awaited("t", np.array([1]), int)
    >>> risky = Awaited("t", np.array([2]), int, np.array([True]))
    >>> idle_limit([sure, risky]), idle_limit([risky])
    (180.0, 30.0)
    >>> risky.seen([b"2"]); idle_limit([risky])
    0.0
    """
    if any(wait.missing for wait in awaited):
        return FORWARD_IDLE_S
    return AT_RISK_IDLE_S if any(wait.missing_at_risk for wait in awaited) else 0.0


def wait_for_arrivals(
    settings: Settings, awaited: Sequence[Awaited], meanwhile: Callable[[], object]
) -> None:
    """Until every awaited record is on its topic, or until no record came for `idle_limit`
    (the checks then count what is missing); `meanwhile` runs before each read (the runner
    starts a connector again that ended)."""
    followers = [(TopicFollower(settings, wait.topic), wait) for wait in awaited]
    moved = time.monotonic()
    try:
        while time.monotonic() - moved < idle_limit(awaited):
            meanwhile()
            came = False
            for follower, wait in followers:
                new = follower.new_records(wait_s=5.0) if wait.waiting else []
                wait.seen([value for _, _, value in new])
                came = came or bool(new)
            if came:
                moved = time.monotonic()
            else:
                time.sleep(0.5)
    finally:
        for follower, _ in followers:
            follower.close()
