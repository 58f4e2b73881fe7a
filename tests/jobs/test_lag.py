"""A query's Kafka lag: its committed offsets (checkpoint, progress report) against the ends."""

from __future__ import annotations

import doctest
import json
import time
from pathlib import Path

import pytest

from statestream.config import KafkaSettings, Settings
from statestream.jobs import lag as lag_module
from statestream.jobs.lag import (
    QueryLag,
    committed_offsets,
    kafka_end_offsets,
    lag,
    partitions_to_ask,
    progress_lag,
    progress_offsets,
    query_lag,
    query_lags,
    source_offsets,
)
from tests.support import free_ports

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1795249656549,"conf":{"a":"b"}}'


def write_batch(checkpoint: Path, batch: int, sources: list[str], committed: bool = True) -> None:
    """Batch `batch` of a checkpoint as Spark writes it: `offsets/N`, and `commits/N` once done."""
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text("\n".join(["v1", METADATA, *sources]))
    if committed:
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_the_newest_committed_batch_of_the_checkpoint_is_read(tmp_path: Path) -> None:
    write_batch(tmp_path, 9, ['{"machine.data":{"0":1,"1":2}}'])
    write_batch(tmp_path, 10, ['{"machine.data":{"0":22926,"1":14064}}', '{"logOffset":3}'])
    write_batch(tmp_path, 11, ['{"machine.data":{"0":30000,"1":20000}}'], committed=False)
    (tmp_path / "offsets" / ".10.crc").write_text("x")
    assert committed_offsets(tmp_path) == {"machine.data": {0: 22926, 1: 14064}}


def test_every_kafka_source_of_a_batch_is_read(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, ['{"a":{"0":5}}', '{"b":{"0":7,"2":1}}'])
    assert committed_offsets(tmp_path) == {"a": {0: 5}, "b": {0: 7, 2: 1}}


def test_a_checkpoint_without_a_committed_batch_gives_nothing(tmp_path: Path) -> None:
    assert committed_offsets(tmp_path) == {}
    assert committed_offsets(tmp_path / "missing") == {}
    write_batch(tmp_path, 0, ['{"machine.data":{"0":1}}'], committed=False)
    assert committed_offsets(tmp_path) == {}


def test_the_offsets_of_a_progress_report_are_its_sources_end_offsets() -> None:
    progress = {
        "sources": [
            {"startOffset": {"in": {"0": 1400}}, "endOffset": {"in": {"0": 2100, "1": 3}}},
            {"endOffset": '{"other":{"0":9}}'},  # some sources give it as JSON text
            {"endOffset": {"logOffset": 3}},  # a file source: not Kafka's
        ]
    }
    assert progress_offsets(progress) == {"in": {0: 2100, 1: 3}, "other": {0: 9}}
    assert progress_offsets({}) == {}


def test_a_progress_reports_lag_is_each_sources_latest_against_its_end_offsets() -> None:
    progress = {
        "sources": [
            {
                "endOffset": '{"in":{"0":100,"1":40}}',
                "latestOffset": {"in": {"0": 130, "1": 45, "2": 9}},  # 2: no end offset yet
            },
            {"endOffset": {"in": {"0": 120}}, "latestOffset": '{"in":{"0":125}}'},  # same topic
            {"endOffset": {"other": {"0": 9}}, "latestOffset": {"other": {"0": 3}}},  # not < 0
            {"endOffset": {"logOffset": 3}, "latestOffset": None},  # a file source
            "not a source",
        ]
    }
    assert progress_lag(progress) == 30 + 5 + 5
    assert progress_lag({}) == progress_lag({"sources": None}) == 0


@pytest.mark.parametrize("value", ["not json", "[1]", '{"t":{"0":"x"}}', '{"t":{"0":true}}'])
def test_unreadable_source_offsets_are_left_out(value: str) -> None:
    assert source_offsets(value) == {}


def test_the_lag_is_per_partition_and_never_below_zero() -> None:
    found = query_lag(
        {"in": {0: 90, 1: 50, 2: 70}, "other": {0: 1}},
        {"in": {0: 100, 1: 50, 2: 60, 3: 8}},  # 2: a position past the end; 3: none
    )
    assert found == QueryLag({"in": {0: 10, 1: 0, 2: 0}})
    assert found.total == 10
    assert found.as_json() == {"total": 10, "topics": {"in": {"0": 10, "1": 0, "2": 0}}}
    json.dumps(found.as_json())  # what status --json prints


def test_a_consumers_lag_counts_only_partitions_with_a_position() -> None:
    assert lag({0: 100, 1: 50, 2: 7}, {0: 90, 1: 50}) == 10


def test_the_lag_is_unknown_without_the_ends_of_its_topics() -> None:
    assert query_lag({"in": {0: 90}}, {}) is None
    assert query_lag({"in": {0: 90}}, {"in": {1: 5}}) is None
    assert query_lag({}, {"in": {0: 5}}) is None


def test_the_partitions_to_ask_are_those_without_a_known_end() -> None:
    committed = [{"a": {0: 1, 1: 2}}, {"a": {2: 3}, "b": {0: 5}}, {}]
    assert partitions_to_ask(committed, {"a": {0: 9}}) == {"a": [1, 2], "b": [0]}
    assert partitions_to_ask(committed, {"a": {0: 9, 1: 9, 2: 9}, "b": {0: 1}}) == {}


def test_without_asking_kafka_every_lag_is_unknown() -> None:
    assert query_lags(Settings(), [{"in": {0: 1}}, {}], timeout_s=0) == [None, None]


def _nowhere() -> Settings:
    """Settings of a Kafka nobody runs: a local port no one listens on."""
    [port] = free_ports(1)
    kafka = KafkaSettings(bootstrap_servers=f"127.0.0.1:{port}", sasl_username="nobody")
    return Settings().model_copy(update={"kafka": kafka})


def test_a_kafka_that_does_not_answer_gives_no_ends_within_the_timeout() -> None:
    started = time.monotonic()
    assert kafka_end_offsets(_nowhere(), {"in": [0, 1]}, timeout_s=1.0) == {}
    assert time.monotonic() - started < 5.0
    assert query_lags(_nowhere(), [{"in": {0: 1}}], timeout_s=0.5) == [None]


def test_docstring_examples() -> None:
    result = doctest.testmod(lag_module)
    assert result.attempted > 0 and result.failed == 0
