"""The tables `statestream bench pipeline` and `bench asof` print from their figures; `bench join`'s
switch."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
from rich.console import Console

from statestream.cli._bench import benchmark
from statestream.cli._pipeline_table import pipeline_table
from statestream.cli.bench_asof_cmd import _table as asof_table


def _figures() -> dict:
    """Figures as the bench writes them for a small run: one throughput batch, no baseline."""
    return {
        "records": 20_000,
        "things": 6,
        "records_per_s": 4_307,
        "sustained_records_per_s": None,
        "pairs_per_s": 2_366,
        "pairs": 21_785,
        "expected_pairs": 21_785,
        "pairs_missed": 0,
        "pairs_extra": 0,
        "pairs_duplicated": 0,
        "batches": 1,
        "seconds": 9.21,
        "state_rows": [6],
        "latency_rate": 10_000.0,
        "latency_trigger_interval_s": 0.5,
        "latency_pairs": 985_245,
        "latency_p50_s": 0.612,
        "latency_p99_s": 1.293,
        "latency_after_later_record_p50_s": 0.658,
        "latency_after_later_record_p99_s": 6.984,
        "latency_pairs_waiting_for_data": 219_922,
        "latency_largest_burst": 76_368,
        "latency_burst_seconds": 0.912,
        "driver_result_bytes_per_batch": 63_735,
        "latency_batch": {
            "records": 5_000.0,
            "batch_ms": 284.0,
            "planning_ms": 11.0,
            "offset_log_ms": 1.0,
            "execution_ms": 262.5,
            "commit_log_ms": 2.0,
            "batch_p99_ms": 730.8,
            "batch_max_ms": 887.0,
        },
        "latency_checkpoint_bytes": [595_489, 3_605_714, 4_177_234],
    }


def _text(figures: dict) -> str:
    console = Console(width=200, record=True)
    console.print(pipeline_table(figures))
    return console.export_text()


def test_a_run_of_one_batch_prints_no_rate_after_the_first_batch() -> None:
    text = _text(_figures())
    assert "— (one batch only)" in text
    assert "most pairs certain within 0.5 s" in text
    assert "76,368 pairs, all visible within 0.912 s" in text
    assert "63,735 at most" in text
    assert "731 / 887 ms" in text
    assert "0.6 / 3.6 / 4.2" in text
    assert "windowed join" not in text


def test_the_rate_after_the_first_batch_is_printed_when_there_is_one() -> None:
    text = _text(_figures() | {"sustained_records_per_s": 153_096, "batches": 5})
    assert "153,096" in text
    assert "one batch only" not in text


def test_the_burst_part_prints_what_it_released_and_how_long_it_took() -> None:
    burst = {
        "burst_records": 1_000,
        "burst_pairs_expected": 251_000,
        "burst_pairs": 251_000,
        "burst_seconds": 1.234,
        "burst_batch_ms": 987,
        "burst_wait_ms": 120,
        "burst_visible_after_ms": 127,
    }
    text = _text(_figures() | burst)
    assert "burst: 1,000 records release" in text
    assert "251,000 of 251,000 pairs" in text
    assert "1.234 s" in text
    assert "120 / 987 / 127 ms" in text
    assert "burst:" not in _text(_figures())
    assert "wait for its 2 batches / batches / read" in _text(
        _figures() | burst | {"burst_batches": 2}
    )


def test_the_cold_latency_run_is_printed_beside_the_measured_one() -> None:
    cold = {"cold_latency_seconds": 10.0, "cold_latency_p50_s": 0.497, "cold_latency_p99_s": 1.08}
    text = _text(_figures() | cold)
    assert "first 10 s run (cold), p50 / p99" in text
    assert "0.497 s / 1.08 s" in text
    assert "(cold)" not in _text(_figures())


def test_where_it_ran_and_records_per_core() -> None:
    cluster = {
        "spark_master": "spark://localhost:7077",
        "spark_workers": 2,
        "spark_worker_cores": 1,
        "task_cores": 2,
        "records_per_s_per_core": 21_500,
    }
    text = _text(_figures() | cluster)
    assert "spark://localhost:7077: 2 workers × 1 cores" in text
    assert "21,500 (2 cores)" in text
    local = _text(_figures() | {"spark_master": "local[*,4]", "spark_workers": 0})
    assert "local[*,4]" in local and "workers" not in local


def test_the_pass_through_and_the_joins_share_of_it_are_printed_when_it_ran() -> None:
    passthrough = {
        "passthrough_records_per_s": 512_345,
        "passthrough_sustained_records_per_s": 640_000,
        "passthrough_batches": 5,
        "passthrough_seconds": 3.91,
        "passthrough_records_out": 2_002_325,
        "passthrough_unchanged": True,
        "join_to_passthrough": 0.421,
    }
    text = _text(_figures() | passthrough)
    assert "pass-through (same input, same sink): records/s" in text and "512,345" in text
    assert "640,000" in text and "5, 3.91 s" in text
    assert "2,002,325, each input record once, unchanged" in text
    assert "join / pass-through (records/s)" in text and "0.421" in text
    assert "pass-through" not in _text(_figures())  # --no-passthrough
    changed = _text(_figures() | passthrough | {"passthrough_unchanged": False})
    assert "NOT the input's records" in changed
    one_batch = _text(_figures() | passthrough | {"passthrough_sustained_records_per_s": None})
    assert one_batch.count("— (one batch only)") == 2  # the join's and the pass-through's


@pytest.mark.parametrize(("patches", "kept"), [("true", True), ("false", False)])
def test_bench_join_runs_the_engine_with_the_freed_memory_patch_as_switched(
    patches: str, kept: bool
) -> None:
    """`bench join` runs the engine as Spark's Python workers do: with the freed_memory patch
    when `spark.patches` is on (this machine's C library is glibc), with malloc as it is off."""
    arguments = ["bench", "join", "--things", "20", "--records", "2000", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "statestream", *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, "STATESTREAM_SPARK__PATCHES": patches},
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["freed_memory"] is (kept and platform.libc_ver()[0] == "glibc")
    assert figures["things"] == 20
    assert figures["pairs"] > 0


def test_bench_asof_prints_the_sql_join_where_it_was_measured() -> None:
    """The committed run (Spark 4.1: no SQL ASOF JOIN), then the same with a SQL row."""
    recorded = json.loads(
        (benchmark("results_page").RESULTS / "asof.jsonl").read_text().split("\n")[0]
    )
    figures = recorded["figures"]
    baselines = benchmark("asof_baselines")

    def text(figures: dict) -> str:
        console = Console(width=200, record=True)
        console.print(asof_table(figures, baselines))
        return console.export_text()

    without = text(figures)
    assert "DataFrame._joinAsOf" in without and "Spark SQL LEFT ASOF JOIN" not in without
    assert "Spark SQL's ASOF JOIN: not in this Spark" in " ".join(without.split())  # the caption
    sql = {"baseline": "Spark SQL LEFT ASOF JOIN", "rows": 10_000_000, "capped": False}
    sql |= {"checked_trades": 5_000, "matched_trades": 4_513, "rows_per_s": 300_000}
    sql |= {"ratio": 1.35, "ratio_same_input": 1.35}
    measured = {**figures, "SQL ASOF JOIN": sql, "spark_sql_asof_join": "measured"}
    rows = [line for line in text(measured).splitlines() if line.startswith("│")]
    [row] = [line for line in rows if "Spark SQL LEFT ASOF JOIN" in line]
    assert "10,000,000" in row and "300,000" in row and row.count("1.35×") == 2
    caption = " ".join(text(measured).split())
    assert "Spark SQL LEFT ASOF JOIN matched 4,513 of 5,000 trades" in caption
