"""Bytes per record of each encoding for the same data: plain JSON, JSON and protobuf envelope.

Two measures: the encoded key and value themselves, and what Kafka's log holds per record once
the records are written (record-batch framing and, if chosen, compression included), read from
the segment files of a local broker.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from statestream.codecs.bad_input import now_ms
from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.ingest.base import EventRejected, MachineRecord, RawEvent
from statestream.ingest.envelope import ENVELOPES, Envelope, codec_for
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.pipeline import machine_data_pipeline
from statestream.ingest.replay import ReplayConnector
from statestream.services.kafka import KafkaBroker
from statestream.services.kafka_security import grant_topics

COMPRESSIONS = ("none", "lz4", "zstd")


@dataclass
class EncodingSize:
    """The size of one encoding of the records; `log_bytes` per compression, when measured."""

    envelope: Envelope
    records: int
    key_bytes: int
    value_bytes: int
    log_bytes: dict[str, int] = field(default_factory=dict)

    def per_record(self, total: int) -> float:
        return round(total / self.records, 1) if self.records else 0.0

    def as_dict(self) -> dict:
        return {
            "envelope": self.envelope,
            "records": self.records,
            "key_bytes_per_record": self.per_record(self.key_bytes),
            "value_bytes_per_record": self.per_record(self.value_bytes),
            "log_bytes_per_record": {c: self.per_record(n) for c, n in self.log_bytes.items()},
        }


def records_of(lines: Sequence[bytes]) -> list[MachineRecord]:
    """The records the machine-data processor makes of `lines` (rejected lines left out)."""
    processor, records = MachineRowProcessor(), []
    for line in lines:
        try:
            records += processor.process(RawEvent(line, "file", 0))
        except EventRejected:
            continue
    return records


def encoded_sizes(records: Sequence[MachineRecord]) -> list[EncodingSize]:
    """Key and value bytes of the records in every encoding (ingestion time: now)."""
    ingestion_ms = now_ms()
    sizes = []
    for envelope in ENVELOPES:
        codec = codec_for(envelope)
        value_bytes = sum(len(codec.encode(record, ingestion_ms)) for record in records)
        key_bytes = sum(len(record.key.encode()) for record in records)
        sizes.append(EncodingSize(envelope, len(records), key_bytes, value_bytes))
    return sizes


def measure_kafka_logs(
    settings: Settings,
    lines: Sequence[bytes],
    sizes: list[EncodingSize],
    say: Callable[[str], None] = lambda _text: None,
) -> None:
    """Write the rows in each encoding and compression to a fresh one-partition topic and read
    the bytes of its log segments; fills `log_bytes`. Needs the broker on this machine."""
    log_dir = _local_log_dir(settings)
    admin = AdminClient(settings.kafka.client_config())
    run = uuid.uuid4().hex[:8]
    for size in sizes:
        for compression in COMPRESSIONS:
            topic = f"statestream.logsize.{run}.{size.envelope}.{compression}"
            say(f"writing {size.records:,} records as {size.envelope}, compression {compression}")
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
            grant_topics(settings, [topic], "connector")
            try:
                _write(settings, topic, size.envelope, compression, lines)
                size.log_bytes[compression] = _segment_bytes(log_dir / f"{topic}-0")
            finally:
                _delete(admin, topic)


def _delete(admin: AdminClient, topic: str) -> None:
    """Delete a topic and wait until Kafka did (an exiting process would drop the request)."""
    for future in admin.delete_topics([topic]).values():
        with contextlib.suppress(Exception):
            future.result(30)


def _write(
    settings: Settings, topic: str, envelope: Envelope, compression: str, lines: Sequence[bytes]
) -> None:
    ingest = settings.ingest.model_copy(
        update={"envelope": envelope, "compression": compression, "linger_ms": 50.0}
    )
    pipeline = machine_data_pipeline(
        settings.model_copy(update={"ingest": ingest}), records_topic=topic
    )
    ReplayConnector(lines, "file").run(pipeline, threading.Event())


def _local_log_dir(settings: Settings) -> Path:
    broker = KafkaBroker(settings)
    if not settings.kafka.is_local or not broker.data_dir.is_dir():
        raise ServiceError(
            "measuring Kafka's log needs the broker statestream runs on this machine "
            f"(its log folder {broker.data_dir} is not here); use --no-kafka for encoded sizes"
        )
    return broker.data_dir


def _segment_bytes(partition_dir: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while not partition_dir.is_dir():
        if time.monotonic() > deadline:
            raise ServiceError(f"the log folder {partition_dir} did not appear")
        time.sleep(0.1)
    return sum(segment.stat().st_size for segment in partition_dir.glob("*.log"))
