"""The soak's figures from the files a run leaves: its queries' progress reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

from statestream.chaos.checkpoints import CheckpointSize
from statestream.chaos.soak import (
    Sample,
    group_open_files,
    group_rss_mb,
    not_flat,
    queries_state_and_lag,
    settled_samples,
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
    state = {
        "numRowsTotal": 73,
        "memoryUsedBytes": 9_999,
        "customMetrics": {"rocksdbSstFileSize": 2_000},
    }
    _report(tmp_path, "join.run1", 7, {"sources": [source], "stateOperators": [state]})
    in_memory = {"numRowsTotal": 5, "memoryUsedBytes": 300, "customMetrics": {}}  # no RocksDB
    _report(tmp_path, "stats.run1", 7, {"sources": [source], "stateOperators": [in_memory]})
    _report(tmp_path, "join.old", 6, {"sources": [source], "stateOperators": [state]})  # not ours
    assert queries_state_and_lag(tmp_path, 7) == (2_300, 78, 70)


def _state(files_kb: list[float], rows: list[int], first_minute: int = 0) -> list[Sample]:
    return [
        Sample(60.0 * i, {}, int(kb * 1e3), 0, 0, state_rows=n)
        for i, (kb, n) in enumerate(zip(files_kb, rows, strict=True), start=first_minute)
    ]


def test_a_small_states_files_move_with_rocksdbs_flushes_and_compactions() -> None:
    # a soak's state files (seed 17, its last 40 minutes): a few hundred kB moving by several
    # times their size, the last third's peak 12 % above the first's
    files_kb = [208, 84, 79, 90, 92, 83, 208, 208, 195, 167, 186, 112, 219, 202, 199, 207, 166]
    files_kb += [161, 130, 133, 169, 156, 134, 121, 103, 129, 264, 236, 175, 190, 112, 100, 89]
    files_kb += [93, 241, 246, 89, 62, 76, 90]
    samples = _state(files_kb, [400] * len(files_kb), first_minute=20)  # of a 59-minute run
    assert len(settled_samples(samples)) == 40
    assert not_flat(samples, rate=20.0) == []


def test_a_state_that_keeps_rows_it_should_drop_is_not_flat() -> None:
    rows = [400 + 60 * i for i in range(9)]  # the settled 6: 580 to 880 rows
    assert not_flat(_state([200.0] * 9, rows), rate=20.0) == [
        "state grew from 640 to 880 rows over the last 6 samples"
    ]


def test_state_files_that_grow_by_megabytes_are_not_flat() -> None:
    files_kb = [1_000.0 + 800 * i for i in range(9)]  # the settled 6: 3.4 to 7.4 MB
    assert not_flat(_state(files_kb, [400] * 9), rate=20.0) == [
        "state grew 76 % over the last 6 samples (from 4.2 to 7.4 MB of files)"
    ]


def test_a_lag_that_outgrows_the_load_is_not_flat() -> None:
    samples = [Sample(60.0 * i, {"kafka": 500.0}, 0, 0, 40 if i < 5 else 2_000) for i in range(7)]
    assert not_flat(samples, rate=20.0) == ["Kafka lag reached 2,000 records (> 30 s of the load)"]


def test_memory_is_measured() -> None:
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


def _sizes(windows_mb: dict[str, float], batches: int = 120) -> dict[str, CheckpointSize]:
    return {
        query: CheckpointSize(int(mb * 2e6), int(mb * 1e6), batches)
        for query, mb in windows_mb.items()
    }


def test_the_checkpoint_that_grew_is_named() -> None:
    by_query = [_sizes({"join": 4.0, "geo": 1.0 * (1 + i)}) for i in range(7)]
    samples = [Sample(60.0 * i, {}, 0, 0, 0, {}, sizes) for i, sizes in enumerate(by_query)]
    assert not_flat(samples, rate=20.0) == [  # the last 5: from 4 + 3 to 4 + 7 MB
        "checkpoints grew 57 % over the last 5 samples (from 7 to 11 MB; "
        "most in geo: 3.0 to 7.0 MB)"
    ]


def test_the_files_spark_deletes_once_a_minute_are_a_sawtooth_not_growth() -> None:
    # the checkpoint holds 100 to 170 batches as the state store's maintenance comes and goes
    # (the settled 8 samples: all of it 42 % more at the end than in the first third); the
    # window of the newest 100 stays
    held = [100, 170, 105, 160, 110, 120, 105, 170, 100, 165, 100, 170]
    samples = [
        Sample(60.0 * i, {}, 0, int(5e6 * batches / 100), 0, {}, _sizes({"join": 5.0}, batches))
        for i, batches in enumerate(held)
    ]
    assert not_flat(samples, rate=20.0) == []


def test_a_checkpoint_that_keeps_its_old_batches_is_not_flat() -> None:
    samples = [
        Sample(60.0 * i, {}, 0, 0, 0, {}, _sizes({"join": 5.0}, 100 + 40 * i)) for i in range(9)
    ]  # the settled 6: 220 to 420 batches
    assert not_flat(samples, rate=20.0) == [
        "a checkpoint kept old batches: it held 380 or more, first at most 260"
    ]
