"""Python and the JVM agree, byte for byte, on the packed rows and the commit markers.

Python packs the rows (`exactly_once.packed_rows`) that the JVM's `TransactionalPartition.unpack`
sends as records; the JVM writes the commit markers (`CommitMarkers`) that Python reads
(`exactly_once.markers`). Each side is held to the same golden files (`golden_files`): a change
of either side's format fails its test here. The JVM's side runs in the test run's SparkSession,
through py4j, on the jar `make setup` builds.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from statestream.exactly_once.markers import CommitMarker, read_marker
from statestream.exactly_once.packed_rows import PACKED_COLUMNS, records
from tests.exactly_once.golden_files import (
    COMMIT_MARKER,
    PACKED_RECORDS,
    PACKED_ROWS,
    decode,
    encode,
    golden_rows,
)


def _golden_rows() -> list[dict[str, Any]]:
    return decode(PACKED_ROWS.read_bytes())


def _golden_records() -> dict[str, Any]:
    return json.loads(PACKED_RECORDS.read_text(encoding="utf-8"))


def _golden_marker() -> dict[str, Any]:
    return json.loads(COMMIT_MARKER.read_text(encoding="utf-8"))


def test_the_python_packer_writes_the_golden_packed_rows() -> None:
    assert encode(golden_rows()) == PACKED_ROWS.read_bytes()
    assert _golden_records()["columns"] == PACKED_COLUMNS


def test_python_reads_the_golden_packed_rows_as_their_records() -> None:
    rows, expected = _golden_rows(), _golden_records()["rows"]
    assert [(r["kind"], r["topic"], r["count"]) for r in rows] == [
        (e["kind"], e["topic"], e["count"]) for e in expected
    ]
    for row, want in zip(rows, expected, strict=True):
        got = [[key, value] for _, key, value in records(row["topic"], row["keys"], row["values"])]
        assert got == [[key, value.encode()] for key, value in want["records"]]
        assert len(got) == row["count"]


def test_python_reads_the_golden_commit_marker() -> None:
    golden = _golden_marker()
    marker = read_marker(golden["value"].encode())
    assert marker == CommitMarker(
        golden["query"], golden["query_id"], golden["partition"], golden["batch_id"]
    )
    assert marker.key == golden["key"]


@pytest.mark.integration
def test_the_jvm_unpacks_the_golden_packed_rows_to_their_records(spark) -> None:
    sink = spark.sparkContext._jvm.io.statestream.kafka.ExactlyOnceKafkaSink
    for row, want in zip(_golden_rows(), _golden_records()["rows"], strict=True):
        unpacked = json.loads(sink.unpackedRecords(row["keys"], row["values"]))
        got = [[key, base64.b64decode(value)] for key, value in unpacked]
        assert got == [[key, value.encode()] for key, value in want["records"]]


@pytest.mark.integration
def test_the_jvm_writes_and_reads_the_golden_commit_marker(spark) -> None:
    sink = spark.sparkContext._jvm.io.statestream.kafka.ExactlyOnceKafkaSink
    golden = _golden_marker()
    lineage = (golden["query"], golden["query_id"], golden["partition"])
    assert sink.markerKey(*lineage) == golden["key"]
    assert bytes(sink.markerValue(*lineage, golden["batch_id"])) == golden["value"].encode()
    assert sink.markerBatchId(golden["value"].encode()) == golden["batch_id"]
