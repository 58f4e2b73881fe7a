"""Where a micro-batch's time goes, from Spark's progress reports of a query.

The latency part of `statestream bench pipeline` reports these medians next to its percentiles:
a pair waits for the batch running when its record arrives and then for the next one, so the
batch time, and what it is made of, bounds the latency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# (figure, key of the progress report's durationMs)
_DURATIONS = (
    ("batch_ms", "triggerExecution"),
    ("planning_ms", "queryPlanning"),
    ("offset_log_ms", "walCommit"),
    ("execution_ms", "addBatch"),  # the Spark job and the Kafka transaction
    ("commit_log_ms", "commitOffsets"),
)


def batch_time_medians(progress: Sequence[Mapping]) -> dict[str, float]:
    """Median figures over the batches that read records (none: an empty dict).

    records, and milliseconds: batch (also its 99th percentile and maximum), planning, offset
    log, execution (the Spark job and the Kafka transaction), commit log; and per state store
    (one per shuffle partition, each in a task of its own, side by side): loading its version
    and committing the next.
    """
    batches = [p for p in progress if p.get("numInputRows")]
    if not batches:
        return {}
    figures = {"records": _median([p["numInputRows"] for p in batches])}
    for name, key in _DURATIONS:
        figures[name] = _median([p["durationMs"].get(key, 0) for p in batches])
    durations = [p["durationMs"].get("triggerExecution", 0) for p in batches]
    figures["batch_p99_ms"] = round(float(np.percentile(durations, 99)), 1)
    figures["batch_max_ms"] = float(max(durations))
    operators = [p["stateOperators"][0] for p in batches if p.get("stateOperators")]
    if operators:
        loads = [(op.get("customMetrics") or {}).get("rocksdbLoadLatencyMs", 0) for op in operators]
        commits = [op["commitTimeMs"] for op in operators]
        figures["state_load_ms"] = _median(_per_store(operators, loads))
        figures["state_commit_ms"] = _median(_per_store(operators, commits))
    return figures


def _per_store(operators: Sequence[Mapping], totals: Sequence[float]) -> list[float]:
    """Figures Spark sums over each operator's state stores, per store."""
    return [
        total / max(1, int(op.get("numStateStoreInstances") or 1))
        for op, total in zip(operators, totals, strict=True)
    ]


def _median(values: Sequence[float]) -> float:
    return round(float(np.median(values)), 1)
