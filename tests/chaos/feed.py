"""What the chaos tests of the vehicle checks share: the vehicle simulator's perfect feed as the
records the connector would write to the positions topic."""

from __future__ import annotations

import zlib

from statestream.exactly_once.read import Record
from statestream.ingest.base import RawEvent
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.vehicle_positions import vehicle_codec_for
from statestream.ingest.vehicle_simulator import FeedFaults, vehicle_events

BASE_MS = 1_764_051_300_000  # a whole minute


def simulated_records(vehicles: int, seconds: int, seed: int, partitions: int = 3) -> list[Record]:
    """(partition, key, value) of every position, in publishing order, each vehicle in one
    partition (by its key)."""
    processor, codec = VehiclePositionProcessor(), vehicle_codec_for("none")
    records: list[Record] = []
    for topic, payload in vehicle_events(
        vehicles, seed, BASE_MS, seconds, faults=FeedFaults.none()
    ):
        [position] = processor.process(RawEvent(payload, topic, 0))
        key = position.key.encode()
        records.append((zlib.crc32(key) % partitions, key, codec.encode(position, 0)))
    return records
