"""Replaying a recording with its own timing: to MQTT, or through the processors to Kafka.

To MQTT, one connection publishes each message on its recorded topic (`topic_root` before it)
at the plan's QoS, through the simulator's publisher (`publish_to_mqtt`: pipelined, sent again
after a lost connection). To Kafka, the messages go through the connector's pipeline, routed by
topic as `connect mqtt` routes them (`ReplayConnector.of_messages`), so the records are the ones
the connector would write. Each message leaves when its due time (`schedule`) comes; the
`PaceTracker` keeps how late each one left. `copies` run side by side as processes
(`replay_copies`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from statestream.codecs.bad_input import now_ms
from statestream.config import Settings
from statestream.errors import InputError
from statestream.ingest.machine_delivery import publish_to_mqtt
from statestream.ingest.pipeline import connector_pipeline
from statestream.ingest.recording.adjust import ReplayAdjuster
from statestream.ingest.recording.reader import RecordingReader
from statestream.ingest.recording.schedule import (
    PaceFigures,
    PaceTracker,
    TimedMessage,
    schedule,
)
from statestream.ingest.replay import ReplayConnector

Target = Literal["mqtt", "kafka"]
LOOKAHEAD = 1000  # messages read ahead to count those due


@dataclass(frozen=True)
class ReplayPlan:
    """What to replay, where to and how."""

    files: tuple[Path, ...]
    target: Target = "mqtt"
    speed: float = 1.0  # 0: as fast as possible
    loop: bool = False
    shift_time: bool = False
    copies: int = 1
    topic_root: str = ""  # put before every topic
    qos: int = 1  # MQTT only


@dataclass
class ReplayResult:
    """What a replay (all its copies) sent, how well it kept the pace, what Kafka made of it."""

    pace: PaceFigures
    payload_bytes: int
    seconds: float
    records: int | None = None  # Kafka only
    dead_letters: int | None = None
    unadjusted: int = 0  # payloads of no known kind that an adjustment left as they were
    cut_short: int = 0  # last lines of a file that were not whole

    def merged(self, other: ReplayResult) -> ReplayResult:
        return ReplayResult(
            self.pace.merged(other.pace),
            self.payload_bytes + other.payload_bytes,
            max(self.seconds, other.seconds),
            _add(self.records, other.records),
            _add(self.dead_letters, other.dead_letters),
            self.unadjusted + other.unadjusted,
            max(self.cut_short, other.cut_short),
        )


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def topic_under(root: str, topic: str) -> str:
    """`topic` with `root` before it: `replay` + `/hfp/v2/…` → `replay/hfp/v2/…`, `replay` +
    `machine/states` → `replay/machine/states`; "" leaves it as it is."""
    if not root:
        return topic
    return root.rstrip("/") + ("" if topic.startswith("/") else "/") + topic


def replay_one(
    settings: Settings,
    plan: ReplayPlan,
    copy: int = 0,
    *,
    stop: threading.Event,
    on_progress: Callable[[int], None] | None = None,
    on_start: Callable[[], None] | None = None,
) -> ReplayResult:
    """Replay the plan's files once (or, with `loop`, until `stop`) as copy `copy`.

    `on_start()` is called when the first message is about to be scheduled (copies wait there
    for each other); `on_progress(sent)` now and then. `InputError` for an empty recording.
    """
    reader = RecordingReader(plan.files)
    tracker = PaceTracker(plan.speed)
    timed = schedule(reader.messages, speed=plan.speed, loop=plan.loop)
    messages = ScheduledMessages(timed, plan, copy, tracker, stop, on_start)
    started = time.monotonic()
    records = dead_letters = None
    if plan.target == "kafka":
        pipeline = connector_pipeline(settings)
        ReplayConnector.of_messages(messages.paced(), on_progress).run(pipeline, stop)
        records, dead_letters = pipeline.counts.records, pipeline.counts.dead_letters
    else:
        # the schedule is the pacer, as `LiveSchedule` is the vehicle simulation's
        publish_to_mqtt(settings, None, messages, plan.qos, messages, on_progress)  # type: ignore[arg-type]
    if tracker.messages == 0 and not stop.is_set():
        names = ", ".join(str(path) for path in plan.files)
        raise InputError(f"no recorded messages in {names}")
    return ReplayResult(
        tracker.figures(),
        messages.payload_bytes,
        time.monotonic() - started,
        records,
        dead_letters,
        messages.unadjusted,
        reader.cut_short,
    )


class ScheduledMessages(Iterator[tuple[str, bytes]]):
    """The plan's messages as (topic, payload), adjusted, and the pacer of their sending:
    a message is allowed once its due time has come. The clock starts at the first call."""

    def __init__(
        self,
        timed: Iterator[TimedMessage],
        plan: ReplayPlan,
        copy: int,
        tracker: PaceTracker,
        stop: threading.Event,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self._timed = timed
        self._plan = plan
        self._copy = copy
        self._tracker = tracker
        self._stop = stop
        self._on_start = on_start
        self._ahead: deque[tuple[float, str, bytes]] = deque()
        self._start: float | None = None
        self._adjust: ReplayAdjuster | None = None
        self.payload_bytes = 0

    @property
    def unadjusted(self) -> int:
        return self._adjust.unadjusted if self._adjust is not None else 0

    def __next__(self) -> tuple[str, bytes]:
        if self._stop.is_set():
            raise StopIteration
        self._fill(1)
        if not self._ahead:
            raise StopIteration
        due_s, topic, payload = self._ahead.popleft()
        self._tracker.sent(due_s, self._elapsed())
        self.payload_bytes += len(payload)
        return topic, payload

    def allowed(self, sent: int) -> int:
        """How many messages are due now (`sent` is not needed: the clock decides); 1 at the
        end, so that the sender sees it is over."""
        self._fill(LOOKAHEAD)
        if self._stop.is_set() or not self._ahead:
            return 1
        now, due = self._elapsed(), 0
        for due_s, _, _ in self._ahead:
            if due_s > now:
                break
            due += 1
        return due

    def wait_s(self, sent: int) -> float:
        """Seconds until the next message is due."""
        self._fill(1)
        if self._stop.is_set() or not self._ahead:
            return 0.0
        return max(0.0, self._ahead[0][0] - self._elapsed())

    def paced(self) -> Iterator[tuple[str, bytes]]:
        """The messages, each yielded once it is due (for a sender without a pacer)."""
        while True:
            delay = self.wait_s(0)
            if delay > 0 and self._stop.wait(delay):
                return
            message = next(self, None)
            if message is None:
                return
            yield message

    def _elapsed(self) -> float:
        assert self._start is not None
        return time.monotonic() - self._start

    def _begin(self) -> ReplayAdjuster:
        """Start: `on_start`, the adjuster (which needs the start time), a first read ahead,
        then the clock, so that reading ahead does not make the first messages late."""
        if self._adjust is None:
            if self._on_start is not None:
                self._on_start()
            plan = self._plan
            self._adjust = ReplayAdjuster(
                shift_time=plan.shift_time, copy=self._copy, start_ms=now_ms()
            )
            self._read_ahead(self._adjust, LOOKAHEAD)
            self._start = time.monotonic()
        return self._adjust

    def _fill(self, count: int) -> None:
        self._read_ahead(self._begin(), count)

    def _read_ahead(self, adjust: ReplayAdjuster, count: int) -> None:
        ahead, root = self._ahead, self._plan.topic_root
        while len(ahead) < count:
            item = next(self._timed, None)
            if item is None:
                return
            message = item.message
            topic, payload = adjust(
                topic_under(root, message.topic), message.payload, item.pass_offset_us // 1000
            )
            ahead.append((item.due_s, topic, payload))
