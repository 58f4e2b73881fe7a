"""The replay's clock: each message leaves at its due time (never before), adjusted for its
copy, with the topic root before it; a stop ends it; copies that cannot reach the broker fail
naming the copy."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.recording import (
    PaceTracker,
    RecordedMessage,
    ReplayPlan,
    format_line,
    run_replay,
    schedule,
)
from statestream.ingest.recording.replayer import ScheduledMessages, topic_under
from tests.support import free_ports

T = 1_795_587_330_000_000
ROW = b'{"Thing": "R1", "Timestamp": 1554096380468, "a": 1.0}'


def _scheduled(
    messages: list[RecordedMessage], plan: ReplayPlan, copy: int = 0, **options: object
) -> tuple[ScheduledMessages, PaceTracker, threading.Event]:
    tracker, stop = PaceTracker(plan.speed), threading.Event()
    timed = schedule(lambda: messages, speed=plan.speed, loop=plan.loop)
    return ScheduledMessages(timed, plan, copy, tracker, stop, **options), tracker, stop  # type: ignore[arg-type]


def test_topics_go_under_the_root() -> None:
    assert topic_under("", "/hfp/v2/x") == "/hfp/v2/x"
    assert topic_under("replay", "/hfp/v2/x") == "replay/hfp/v2/x"
    assert topic_under("replay/", "machine/states") == "replay/machine/states"


def test_each_message_leaves_at_its_due_time_never_before() -> None:
    messages = [RecordedMessage(T + i * 20_000, f"t/{i}", b"%d" % i) for i in range(15)]
    plan = ReplayPlan(files=(), speed=2.0, topic_root="r")
    started: list[float] = []
    scheduled, tracker, _ = _scheduled(messages, plan, on_start=lambda: started.append(1))
    sent: list[tuple[float, str]] = []
    begin = None
    for topic, _payload in scheduled.paced():
        begin = begin or time.monotonic()
        sent.append((time.monotonic() - begin, topic))
    assert started == [1]
    assert [topic for _, topic in sent] == [f"r/t/{i}" for i in range(15)]
    assert sent[-1][0] >= 14 * 0.010 - 0.002  # 20 ms apart at speed 2: 10 ms
    figures = tracker.figures()
    assert figures.messages == 15 and figures.asked_per_s == pytest.approx(100.0)
    assert figures.lag.quantile_s(0.5) < 0.05  # late by the machine's scheduling only


def test_a_sender_with_a_pacer_takes_only_what_is_due() -> None:
    messages = [RecordedMessage(T + i * 300_000, "t", b"%d" % i) for i in range(2)]
    scheduled, tracker, _ = _scheduled(messages, ReplayPlan(files=()))
    assert scheduled.allowed(0) == 1  # the first is due at once
    assert next(scheduled) == ("t", b"0")
    assert scheduled.allowed(1) == 0 and 0.2 < scheduled.wait_s(1) <= 0.3
    time.sleep(scheduled.wait_s(1))
    assert scheduled.allowed(1) == 1
    assert next(scheduled) == ("t", b"1")
    assert scheduled.allowed(2) == 1 and next(scheduled, None) is None  # the end, seen
    assert tracker.messages == 2 and tracker.figures().lag.max_s < 0.3


def test_a_stop_ends_the_replay_and_the_pacer_lets_the_sender_see_it() -> None:
    messages = [RecordedMessage(T + i * 1_000_000, "t", b"") for i in range(5)]
    scheduled, tracker, stop = _scheduled(messages, ReplayPlan(files=(), loop=True))
    assert next(scheduled) == ("t", b"")
    stop.set()
    assert scheduled.allowed(1) == 1 and scheduled.wait_s(1) == 0.0
    assert next(scheduled, None) is None and list(scheduled.paced()) == []
    assert tracker.messages == 1


def test_a_copy_sends_its_own_things() -> None:
    messages = [RecordedMessage(T, "machine/states", ROW)]
    scheduled, _, _ = _scheduled(messages, ReplayPlan(files=(), speed=0), copy=2)
    [(topic, payload)] = list(scheduled.paced())
    assert topic == "machine/states" and orjson.loads(payload)["Thing"] == "R1-copy2"


def test_copies_that_cannot_reach_the_broker_fail_naming_a_copy(tmp_path: Path) -> None:
    recording = tmp_path / "feed.log"
    recording.write_bytes(format_line(RecordedMessage(T, "machine/states", ROW)))
    [port] = free_ports(1)
    settings = Settings().model_copy(
        update={"mqtt": Settings().mqtt.model_copy(update={"port": port, "tls": False})}
    )
    plan = ReplayPlan(files=(recording,), copies=2)
    with pytest.raises(ServiceError, match=r"replay copy [01] failed: cannot reach the MQTT"):
        run_replay(settings, plan, stop=threading.Event())
