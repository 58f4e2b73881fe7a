"""What the feed takes from a pair of machine.out: its chart point and its latency (no Kafka:
the feed's thread is not started, records are handed to it as its consumer would)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from statestream.config import Settings
from statestream.dashboard.kafka_feed import KafkaFeed
from statestream.dashboard.latency import bucket_of


@dataclass
class Record:
    """A consumed record, as much of confluent_kafka.Message as the feed reads."""

    topic_name: str
    raw: bytes
    key_bytes: bytes | None = None

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self.topic_name

    def value(self) -> bytes:
        return self.raw

    def key(self) -> bytes | None:
        return self.key_bytes


def _pair(later_ms: float) -> bytes:
    return json.dumps(
        {
            "thing": "R0815",
            "quantity": "vaPower_C11",
            "phenomenonTime": later_ms - 250,
            "result": -250.0,
            "left": {"quantity": "actSpeed_C11", "phenomenonTime": later_ms - 500, "result": 1},
            "right": {"quantity": "vaTorque_C11", "phenomenonTime": later_ms, "result": 2},
        }
    ).encode()


def test_a_pair_is_charted_and_its_latency_counted() -> None:
    settings = Settings()
    feed = KafkaFeed(settings, deliver=lambda batch: None)
    now_ms = time.time() * 1000
    out = settings.topics.machine_out
    feed._take(Record(out, _pair(now_ms - 300), b"R0815.vaPower_C11"))
    feed._take(Record(out, _pair(now_ms - 7000), b"R0815.vaPower_C11"))
    feed._take(Record(out, b"not json"))
    counts = feed.latency.counts(time.monotonic())
    assert sum(counts) == 2
    assert counts[bucket_of(0.3)] == 1 or counts[bucket_of(0.5)] == 1  # read a moment later
    assert counts[bucket_of(7.0)] == 1
    assert [p.quantity for p in feed._points] == ["vaPower_C11", "vaPower_C11"]
    assert feed.figures[out].unreadable == 1


def test_a_pair_without_both_times_is_charted_but_not_timed() -> None:
    settings = Settings()
    feed = KafkaFeed(settings, deliver=lambda batch: None)
    pair = {"thing": "R1", "quantity": "vaPower_C11", "phenomenonTime": 5, "result": 1.0}
    feed._take(Record(settings.topics.machine_out, json.dumps(pair).encode()))
    assert sum(feed.latency.counts(time.monotonic())) == 0
    assert len(feed._points) == 1
