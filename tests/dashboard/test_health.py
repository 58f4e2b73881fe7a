"""Pipeline health: a query's planned offsets from its checkpoint, rates of topics."""

from __future__ import annotations

from pathlib import Path

from statestream.dashboard.health import TopicFigures, checkpoint_offsets, reason_of

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1795249656549,"conf":{"a":"b"}}'


def write_batch(checkpoint: Path, batch: int, sources: list[str]) -> None:
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    (offsets / str(batch)).write_text("\n".join(["v1", METADATA, *sources]))


def test_the_newest_batch_of_the_checkpoint_is_read(tmp_path: Path) -> None:
    write_batch(tmp_path, 9, ['{"machine.data":{"0":1,"1":2}}'])
    write_batch(tmp_path, 10, ['{"machine.data":{"0":22926,"1":14064}}', '{"logOffset":3}'])
    (tmp_path / "offsets" / ".10.crc").write_text("x")
    assert checkpoint_offsets(tmp_path) == {"machine.data": {0: 22926, 1: 14064}}


def test_a_checkpoint_without_offsets_gives_nothing(tmp_path: Path) -> None:
    assert checkpoint_offsets(tmp_path) == {}
    assert checkpoint_offsets(tmp_path / "missing") == {}


def test_rates_are_over_the_last_five_seconds() -> None:
    figures = TopicFigures("machine.data", "data")
    figures.count(100, now=0.0)
    figures.count(50, now=4.0)
    assert figures.rate(now=4.0) == 30.0
    assert figures.rate(now=6.0) == 10.0  # the first 100 are older than 5 s
    figures.restart_rate()
    assert figures.rate(now=6.0) == 0.0 and figures.records == 150


def test_the_reason_of_a_late_or_dead_letter_record() -> None:
    assert reason_of(b'{"reason": "late", "watermark": 5}') == "late"
    assert reason_of(b"not json") is None
    assert reason_of(b'{"no": "reason"}') is None
