"""Fuzzing the connector's pipeline: every payload ends as its records or as one dead letter."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from statestream.ingest import (
    IngestPipeline,
    MachineRowProcessor,
    PipelineTopics,
    RawEvent,
    codec_for,
)
from tests.fuzz_inputs import FUZZ, check_dead_letter, hostile

ROW = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5, "aaAcc_C11": 2}
MAX_PAYLOAD, RAW_LIMIT, RECEIVED = 65_536, 1_024, 1_700_000_000_000


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
    sink = MemorySink()
    pipeline = IngestPipeline(
        MachineRowProcessor(),
        sink,  # type: ignore[arg-type]
        codec_for("none"),
        PipelineTopics("data", "dead"),
        max_payload_bytes=MAX_PAYLOAD,
        dead_letter_raw_bytes=RAW_LIMIT,
    )
    for index, payload in enumerate(payloads):
        pipeline.submit(RawEvent(payload, "machine/states", RECEIVED + index), token=index)
    assert pipeline.flush(1.0) == list(range(len(payloads)))  # every event done, in order

    dead = [json.loads(value) for topic, _, value in sink.sent if topic == "dead"]
    records = [value for topic, _, value in sink.sent if topic == "data"]
    counts = pipeline.counts
    assert counts.events == len(payloads)
    assert len(dead) == counts.dead_letters == sum(counts.rejected.values())
    assert len(records) == counts.records
    assert len({d["ingested_at"] for d in dead}) == len(dead)  # one dead letter per event
    for letter in dead:
        check_dead_letter(letter, "ingest", ("kind",))
        payload = payloads[letter["ingested_at"] - RECEIVED]
        assert letter["source_topic"] == "machine/states"
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
