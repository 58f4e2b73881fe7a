"""The soak's figures from the files a run leaves: its queries' progress reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

from statestream.chaos.soak import (
    Sample,
    checkpoint_bytes,
    folder_bytes,
    group_open_files,
    group_rss_mb,
    not_flat,
    queries_state_and_lag,
)


def _report(folder: Path, name: str, pid: int, progress: dict) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"pid": pid}))
    (folder / f"{name}.progress").write_text(json.dumps({"progress": progress}))


def test_state_and_lag_come_from_the_last_batches_of_this_process_queries(tmp_path: Path) -> None:
    source = {
        "endOffset": json.dumps({"machine.data": {"0": 100, "1": 40}}),
        "latestOffset": {"machine.data": {"0": 130, "1": 45}},  # 30 + 5 behind
    }
    # Spark's names (PySpark 4.1's progress of a transformWithState query with RocksDB)
    state = {"memoryUsedBytes": 9_999, "customMetrics": {"rocksdbSstFileSize": 2_000}}
    _report(tmp_path, "join.run1", 7, {"sources": [source], "stateOperators": [state]})
    in_memory = {"memoryUsedBytes": 300, "customMetrics": {}}  # a store without RocksDB's files
    _report(tmp_path, "stats.run1", 7, {"sources": [source], "stateOperators": [in_memory]})
    _report(tmp_path, "join.old", 6, {"sources": [source], "stateOperators": [state]})  # not ours
    assert queries_state_and_lag(tmp_path, 7) == (2_300, 70)


def test_a_lag_that_outgrows_the_load_is_not_flat() -> None:
    samples = [Sample(60.0 * i, {"kafka": 500.0}, 0, 0, 40 if i < 5 else 2_000) for i in range(7)]
    assert not_flat(samples, rate=20.0) == ["Kafka lag reached 2,000 records (> 30 s of the load)"]


def test_memory_and_folder_sizes_are_measured(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 1234)
    assert folder_bytes(tmp_path) == 1234
    assert group_rss_mb(os.getpid()) > 10  # this test's own process group (pytest's)
    assert group_rss_mb(None) == 0.0


def test_open_files_that_keep_growing_are_not_flat() -> None:
    samples = [Sample(60.0 * i, {}, 0, 0, 0, {"pipeline": 500 + 300 * i}) for i in range(7)]
    assert not_flat(samples, rate=20.0) == [
        "open files of pipeline grew from 1,100 to 2,300 over the last 5 samples"
    ]


def test_a_few_more_open_files_are_noise() -> None:
    samples = [Sample(60.0 * i, {}, 0, 0, 0, {"kafka": 300 + 10 * i}) for i in range(7)]
    assert not_flat(samples, rate=20.0) == []


def test_the_open_files_of_a_process_group_are_counted() -> None:
    assert group_open_files(os.getpid()) >= 3  # at least stdin, stdout and stderr
    assert group_open_files(None) == 0


def test_each_querys_checkpoint_is_measured_and_the_one_that_grew_is_named(tmp_path: Path) -> None:
    for query, size in (("join", 3_000), ("geo", 500)):
        (tmp_path / query / "state").mkdir(parents=True)
        (tmp_path / query / "state" / "1.zip").write_bytes(b"x" * size)
    assert checkpoint_bytes(tmp_path) == {"geo": 500, "join": 3_000}
    assert checkpoint_bytes(tmp_path / "none") == {}
    by_query = [{"join": 4_000_000, "geo": 1_000_000 * (1 + i)} for i in range(7)]
    samples = [
        Sample(60.0 * i, {}, 0, sum(sizes.values()), 0, {}, sizes)
        for i, sizes in enumerate(by_query)
    ]
    assert not_flat(samples, rate=20.0) == [  # the last 5: from 4 + 3 to 4 + 7 MB
        "checkpoints grew 57 % over the last 5 samples (from 7 to 11 MB; "
        "most in geo: 3.0 to 7.0 MB)"
    ]
