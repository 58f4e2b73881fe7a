"""When each recorded message is sent again, and how well a replay kept to it. Pure: no clock.

`schedule` gives each message its due time, seconds after the replay's start: its receive time
after the recording's first, divided by the speed (speed 0: every message at once, as fast as
possible). A message received before the one ahead of it (a clock that stepped back, files
joined out of order) is due with that one. With `loop` the recording starts again after its
last message and the mean interval between its messages, moved on in recording time by that
much (`TimedMessage.pass_offset_us`, which a time shift adds so that no pass repeats another's
event times).

`PaceTracker` takes each message's due and actual send time and gives `PaceFigures`: the rate
held against the rate asked (the recording's own rate × speed) and the lag behind the
recording's clock (how late each send was: p50, p99, max).

    >>> messages = [RecordedMessage(t, "t", b"") for t in (0, 500_000, 1_000_000)]
    >>> [m.due_s for m in schedule(lambda: messages, speed=2.0, loop=False)]
    [0.0, 0.25, 0.5]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from statestream.errors import StatestreamError
from statestream.ingest.recording.lines import RecordedMessage

LONE_MESSAGE_GAP_US = 1_000_000  # between the passes of a one-message recording


class PaceNotHeld(StatestreamError):
    """A replay fell behind the recording's clock by more than it may."""


class TimedMessage(NamedTuple):
    """A message with the time it is due, in seconds after the replay's start."""

    due_s: float
    message: RecordedMessage
    pass_offset_us: int  # how far its pass is moved on in recording time (0: the first pass)


def schedule(
    open_pass: Callable[[], Iterable[RecordedMessage]], *, speed: float, loop: bool
) -> Iterator[TimedMessage]:
    """The messages of `open_pass()` (called once per pass) with their due times."""
    if speed < 0 or not math.isfinite(speed):
        raise ValueError(f"the speed is 0 (as fast as possible) or more, not {speed}")
    base_us = 0  # recording time from the start at which this pass begins
    while True:
        first_us: int | None = None
        offset_us, count = base_us, 0
        for message in open_pass():
            if first_us is None:
                first_us = message.received_us
            offset_us = max(base_us + message.received_us - first_us, offset_us)
            count += 1
            due_s = offset_us / 1e6 / speed if speed else 0.0
            yield TimedMessage(due_s, message, base_us)
        if not loop or count == 0:
            return
        gap_us = (offset_us - base_us) / (count - 1) if count > 1 else LONE_MESSAGE_GAP_US
        base_us = offset_us + max(1, round(gap_us))


@dataclass
class LagStats:
    """How late sends were, as a histogram of whole milliseconds (exact max kept)."""

    histogram: Counter[int] = field(default_factory=Counter)
    max_s: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.histogram.values())

    def add(self, lag_s: float) -> None:
        """One send, `lag_s` after its due time (an early one counts as on time)."""
        lag_s = max(0.0, lag_s)
        self.histogram[int(lag_s * 1000)] += 1
        self.max_s = max(self.max_s, lag_s)

    def merge(self, other: LagStats) -> None:
        self.histogram.update(other.histogram)
        self.max_s = max(self.max_s, other.max_s)

    def quantile_s(self, q: float) -> float:
        """The lag that a share `q` of the sends kept to (nearest rank, ms resolution)."""
        total = self.count
        if not total:
            return 0.0
        rank, seen = max(1, math.ceil(q * total)), 0
        for millisecond in sorted(self.histogram):
            seen += self.histogram[millisecond]
            if seen >= rank:
                return min(millisecond / 1000, self.max_s)
        return self.max_s


@dataclass
class PaceFigures:
    """What a replay held: messages, rates (messages/s) asked and held, and its lag."""

    messages: int
    asked_per_s: float | None  # None: as fast as possible (speed 0), or too few messages
    held_per_s: float
    lag: LagStats
    recording_per_s: float | None = None  # the recording's own rate, where known
    copies: int = 1  # replays of the recording side by side

    def merged(self, other: PaceFigures) -> PaceFigures:
        """The figures of two replays side by side: messages and rates added."""
        lag = LagStats()
        lag.merge(self.lag)
        lag.merge(other.lag)
        return PaceFigures(
            self.messages + other.messages,
            _sum_or_none(self.asked_per_s, other.asked_per_s),
            self.held_per_s + other.held_per_s,
            lag,
            self.recording_per_s if self.recording_per_s is not None else other.recording_per_s,
            self.copies + other.copies,
        )

    def held(self, max_lag_s: float) -> bool:
        """Whether the replay kept to the recording's clock: p99 lag within `max_lag_s`."""
        return self.asked_per_s is None or self.lag.quantile_s(0.99) <= max_lag_s

    def check(self, max_lag_s: float, speed: float) -> None:
        """`PaceNotHeld`, saying what was held, when the p99 lag exceeds `max_lag_s`."""
        if not self.held(max_lag_s):
            raise PaceNotHeld(
                f"the replay could not hold the recording's pace: {self.describe(speed)} "
                f"(allowed p99: {max_lag_s * 1000:,.0f} ms)"
            )

    def describe(self, speed: float) -> str:
        """One line: held against asked, and the lag."""
        if self.asked_per_s is None:
            return f"{self.held_per_s:,.0f} messages/s (as fast as possible)"
        copies = f" × {self.copies} copies" if self.copies > 1 else ""
        recording = (
            f" (the recording's {self.recording_per_s:,.1f}/s × speed {speed:g}{copies})"
            if self.recording_per_s is not None
            else ""
        )
        lag = self.lag
        return (
            f"held {self.held_per_s:,.1f} messages/s of {self.asked_per_s:,.1f} asked{recording}; "
            f"lag behind the recording's clock p50 {lag.quantile_s(0.5) * 1000:,.0f} ms, "
            f"p99 {lag.quantile_s(0.99) * 1000:,.0f} ms, max {lag.max_s * 1000:,.0f} ms"
        )


def _sum_or_none(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


class PaceTracker:
    """Collects due and actual send times (seconds after the start) of a replay's messages."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.lag = LagStats()
        self.messages = 0
        self._first: tuple[float, float] | None = None  # (due, sent) of the first message
        self._last = (0.0, 0.0)

    def sent(self, due_s: float, sent_s: float) -> None:
        """One message, due at `due_s`, sent at `sent_s`."""
        self.messages += 1
        if self._first is None:
            self._first = (due_s, sent_s)
        self._last = (due_s, sent_s)
        if self.speed:
            self.lag.add(sent_s - due_s)

    def figures(self) -> PaceFigures:
        """The figures so far."""
        first_due, first_sent = self._first or (0.0, 0.0)
        last_due, last_sent = self._last
        intervals = max(self.messages - 1, 0)
        held = intervals / (last_sent - first_sent) if last_sent > first_sent else 0.0
        due_span = last_due - first_due
        asked = intervals / due_span if self.speed and due_span > 0 else None
        recording = asked / self.speed if asked is not None else None
        return PaceFigures(self.messages, asked, held, self.lag, recording)
