"""Fuzzing the connector's pipeline: every payload ends as its records or as one dead letter,
for machine rows and for HFP vehicle positions, routed by topic in one pipeline."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from statestream.config import Settings
from statestream.ingest import IngestPipeline, RawEvent
from statestream.ingest.routes import machine_route, vehicle_route
from statestream.ingest.vehicle_positions import vehicle_codec_for
from tests.fuzz_inputs import FUZZ, check_dead_letter, hfp_topics, hostile, hostile_vp

ROW = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5, "aaAcc_C11": 2}
MAX_PAYLOAD, RAW_LIMIT, RECEIVED = 65_536, 1_024, 1_700_000_000_000
SETTINGS = Settings()


class MemorySink:
    """A `KafkaRecordSink` in memory: records are kept, deliveries confirmed at poll/flush."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes]] = []
        self._callbacks: list[Callable] = []

    def produce(self, topic: str, key: bytes | None, value: bytes, on_delivery: Callable) -> None:
        self.produce_all(topic, [(key, value)], on_delivery)

    def produce_all(self, topic: str, records: list, on_delivery: Callable) -> None:
        for key, value in records:
            self.sent.append((topic, key, value))
            self._callbacks.append(on_delivery)

    def poll(self, timeout_s: float = 0.0) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(None, None)

    def flush(self, timeout_s: float) -> int:
        self.poll()
        return 0


@FUZZ
@given(st.lists(hostile(ROW), min_size=1, max_size=8))
def test_every_payload_ends_as_records_or_one_dead_letter(payloads: list[bytes]) -> None:
    sink, pipeline = _pipeline()
    events = [RawEvent(p, "machine/states", RECEIVED + i) for i, p in enumerate(payloads)]
    _check_every_event_ends_once(sink, pipeline, events)


@FUZZ
@given(st.lists(st.tuples(hfp_topics(), hostile_vp()), min_size=1, max_size=8))
def test_every_vehicle_message_ends_as_one_position_or_one_dead_letter(
    messages: list[tuple[str, bytes]],
) -> None:
    sink, pipeline = _pipeline()
    events = [RawEvent(p, topic, RECEIVED + i) for i, (topic, p) in enumerate(messages)]
    _check_every_event_ends_once(sink, pipeline, events)
    codec = vehicle_codec_for("none")
    for topic, key, value in sink.sent:
        if topic == "vehicles":
            position, _ = codec.decode(value)
            assert key == position.key.encode()
            assert (position.lat is None) == (position.long is None)
            assert position.lat is None or -90 <= position.lat <= 90


def _pipeline() -> tuple[MemorySink, IngestPipeline]:
    """Both use cases in one pipeline, routed by topic, writing to a sink in memory."""
    sink = MemorySink()
    routes = [
        machine_route(SETTINGS, "machine/states", "data"),
        vehicle_route(SETTINGS, "+/hfp/v2/journey/#", "vehicles"),
        vehicle_route(SETTINGS, "#", "vehicles"),  # any other topic: the processor judges it
    ]
    pipeline = IngestPipeline(
        routes,
        sink,  # type: ignore[arg-type]
        "dead",
        max_payload_bytes=MAX_PAYLOAD,
        dead_letter_raw_bytes=RAW_LIMIT,
    )
    return sink, pipeline


def _check_every_event_ends_once(
    sink: MemorySink, pipeline: IngestPipeline, events: list[RawEvent]
) -> None:
    for index, event in enumerate(events):
        pipeline.submit(event, token=index)
    assert pipeline.flush(1.0) == list(range(len(events)))  # every event done, in order

    payloads = [event.payload for event in events]
    dead = [json.loads(value) for topic, _, value in sink.sent if topic == "dead"]
    records = [value for topic, _, value in sink.sent if topic != "dead"]
    counts = pipeline.counts
    assert counts.events == len(payloads)
    assert len(dead) == counts.dead_letters == sum(counts.rejected.values())
    assert len(records) == counts.records
    assert len({d["ingested_at"] for d in dead}) == len(dead)  # one dead letter per event
    for letter in dead:
        check_dead_letter(letter, "ingest", ("kind",))
        event = events[letter["ingested_at"] - RECEIVED]
        payload = event.payload
        assert letter["source_topic"] == event.source
        assert letter["raw_bytes"] == len(payload)
        assert letter["truncated"] == (len(payload) > RAW_LIMIT)
        assert payload.startswith(_raw(letter))
        assert len(_raw(letter)) >= min(len(payload), RAW_LIMIT) - 3
        if len(payload) > MAX_PAYLOAD:
            assert letter["kind"] == "oversize"
    accepted = [p for i, p in enumerate(payloads) if RECEIVED + i not in _times(dead)]
    assert len(accepted) + len(dead) == len(payloads)
    assert all(len(p) <= MAX_PAYLOAD for p in accepted)


def _raw(letter: dict) -> bytes:
    if letter["raw_encoding"] == "base64":
        return base64.b64decode(letter["raw"])
    return letter["raw"].encode()


def _times(dead: list[dict]) -> set[int]:
    return {d["ingested_at"] for d in dead}
