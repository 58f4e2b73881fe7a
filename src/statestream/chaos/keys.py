"""The machine checks of a chaos run in little memory: each record, pair and point as a 64-bit
key, read from its topic (or InfluxDB) as it streams by, so that a 20-minute run at 2,000 rows/s
(some ten million records, three million pairs) is checked in a few hundred megabytes, not the
tens of gigabytes its parsed records would take.

A key is Python's hash of the record's identity tuple (thing, quantity, time, result; a pair's
two records; a point's series and time), computed in this one process, so equal identities give
equal keys. Two different identities share a key with a probability of about n² / 2⁶⁴ for n
keys: below 10⁻⁵ for ten million, and a loss could hide only behind such a collision.
"""

from __future__ import annotations

import io
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import orjson

from statestream.config import Settings
from statestream.exactly_once.read import iter_records
from statestream.ingest.base import EventRejected, RawEvent
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.offline_join import join_lines
from statestream.queries.join.job import spec_templates
from statestream.sinks.influx import influx_row_chunks


def record_hash(record: dict) -> int:
    """The key of a machine record (its JSON as a dict)."""
    return hash(
        (
            record["thing"],
            record["quantity"],
            float(record["phenomenonTime"]),
            float(record["result"]),
        )
    )


def pair_hash(pair: dict) -> int:
    """The key of a pair: its thing, quantity and its two records' times and results."""
    left, right = pair["left"], pair["right"]
    return hash(
        (
            pair["thing"],
            pair["quantity"],
            float(left["phenomenonTime"]),
            float(left["result"]),
            float(right["phenomenonTime"]),
            float(right["result"]),
        )
    )


def point_hash(thing: str, quantity: str, time_us: int) -> int:
    """The key of an InfluxDB point of a pair: its series and time (µs)."""
    return hash((thing, quantity, time_us))


def row_keys(rows: Iterable[bytes], topic: str) -> tuple[np.ndarray, np.ndarray]:
    """The keys of the records the connector makes of each row (its own processor; none of a
    row it refuses), and for each key the number of its row."""
    processor = MachineRowProcessor()
    keys, row_of = array("q"), array("q")
    for number, row in enumerate(rows):
        try:
            made = processor.process(RawEvent(row, topic, 0))
        except EventRejected:
            continue
        for r in made:
            keys.append(hash((r.thing, r.quantity, float(r.phenomenon_time_ms), float(r.result))))
            row_of.append(number)
    return np.frombuffer(keys, np.int64), np.frombuffer(row_of, np.int64)


@dataclass(frozen=True)
class DataScan:
    """machine.data as the checks need it: each record's key and Kafka timestamp (ms), in
    partition order, and the quantities found."""

    keys: np.ndarray
    written_ms: np.ndarray
    quantities: frozenset[str]


def scan_data(settings: Settings) -> DataScan:
    """One read of machine.data, keeping a key and a timestamp per record."""
    keys, written, quantities = array("q"), array("q"), set()
    for (_, _, value), stamp in iter_records(settings, settings.topics.machine_data):
        record = orjson.loads(value)
        keys.append(record_hash(record))
        written.append(stamp)
        quantities.add(record["quantity"])
    return DataScan(
        np.frombuffer(keys, np.int64), np.frombuffer(written, np.int64), frozenset(quantities)
    )


def offline_keys(settings: Settings, quantities: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    """The keys of the pairs the offline join of machine.data makes (another read of it, in
    partition order, with the settings' specs; pairs still waiting for a partner at the end
    are not made, as in the running join), and the keys of their InfluxDB points; unique."""
    templates = spec_templates(settings)
    specs = [spec for template in templates for spec in template.specs_for(sorted(quantities))]
    lines = (
        value + b"\n" for (_, _, value), _ in iter_records(settings, settings.topics.machine_data)
    )
    out = _PairKeys()
    join_lines(lines, specs, out, io.StringIO, flush=False)
    return np.unique(np.frombuffer(out.pairs, np.int64)), np.unique(
        np.frombuffer(out.points, np.int64)
    )


@dataclass(frozen=True)
class OutScan:
    """machine.out as the checks need it: per pair its key, when the later of its two records
    was sent (its event time, ms) and when its task wrote it (Kafka timestamp, ms)."""

    keys: np.ndarray
    sent_ms: np.ndarray
    written_ms: np.ndarray


def scan_out(settings: Settings) -> OutScan:
    """One read of machine.out, keeping a key and two times per pair."""
    keys, sent, written = array("q"), array("d"), array("q")
    for (_, _, value), stamp in iter_records(settings, settings.topics.machine_out):
        pair = orjson.loads(value)
        keys.append(pair_hash(pair))
        sent.append(max(pair["left"]["phenomenonTime"], pair["right"]["phenomenonTime"]))
        written.append(stamp)
    return OutScan(
        np.frombuffer(keys, np.int64),
        np.frombuffer(sent, np.float64),
        np.frombuffer(written, np.int64),
    )


def influx_point_keys(settings: Settings) -> np.ndarray:
    """The keys of the `machine_out` points in the settings' InfluxDB database; unique."""
    keys = array("q")
    query = "SELECT result, thing, quantity FROM machine_out"
    for chunk in influx_row_chunks(settings.influx, query):
        keys.extend(point_hash(r["thing"], r["quantity"], int(r["time"])) for r in chunk)
    return np.unique(np.frombuffer(keys, np.int64))


class _PairKeys(io.StringIO):
    """Where the offline join writes its pairs' JSON lines: keeps each pair's key and its
    point's key, not the lines."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs, self.points = array("q"), array("q")
        self._partial = ""

    def write(self, text: str) -> int:
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            if line:
                self._keep(orjson.loads(line))
        return len(text)

    def _keep(self, pair: dict) -> None:
        self.pairs.append(pair_hash(pair))
        time_us = round(float(pair["phenomenonTime"]) * 1000)
        self.points.append(point_hash(pair["thing"], pair["quantity"], time_us))
