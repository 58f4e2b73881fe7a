"""Medians of where a micro-batch's time goes, from progress reports as Spark writes them."""

from __future__ import annotations

from benchmarks.batch_times import batch_time_medians


def _progress(rows: int, batch: int, execution: int, commit_ms: int, load_ms: int) -> dict:
    return {
        "numInputRows": rows,
        "durationMs": {
            "triggerExecution": batch,
            "queryPlanning": 50,
            "walCommit": 40,
            "addBatch": execution,
            "commitOffsets": 30,
            "latestOffset": 5,
        },
        "stateOperators": [
            {
                "numStateStoreInstances": 2,
                "commitTimeMs": commit_ms,
                "customMetrics": {"rocksdbLoadLatencyMs": load_ms},
            }
        ],
    }


def test_medians_over_the_batches_that_read_records() -> None:
    progress = [
        _progress(9_000, 900, 700, 200, 40),
        {"numInputRows": 0, "durationMs": {"triggerExecution": 3, "latestOffset": 3}},
        _progress(11_000, 1_100, 900, 300, 80),
        _progress(10_000, 1_000, 800, 240, 60),
    ]
    figures = batch_time_medians(progress)
    assert figures == {
        "records": 10_000,
        "batch_ms": 1_000,
        "batch_p99_ms": 1_098.0,  # numpy's linear interpolation between 1,000 and 1,100
        "batch_max_ms": 1_100,
        "planning_ms": 50,
        "offset_log_ms": 40,
        "execution_ms": 800,
        "commit_log_ms": 30,
        "state_load_ms": 30,  # Spark sums over the two state stores: 60 / 2
        "state_commit_ms": 120,
    }


def test_no_state_figures_without_state_operators_and_nothing_without_records() -> None:
    stateless = _progress(5, 10, 8, 0, 0)
    stateless["stateOperators"] = []
    figures = batch_time_medians([stateless])
    assert figures["batch_ms"] == 10
    assert "state_commit_ms" not in figures
    assert batch_time_medians([{"numInputRows": 0, "durationMs": {}}]) == {}
