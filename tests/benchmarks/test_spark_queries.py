"""What the pipeline bench reads from its queries' progress reports."""

from __future__ import annotations

from benchmarks.spark_queries import rate_after_first_batch


def _batch(rows: int, ms: int) -> dict:
    return {"numInputRows": rows, "durationMs": {"triggerExecution": ms}}


def test_the_rate_after_the_first_batch_leaves_the_query_start_out() -> None:
    progress = [_batch(9, 5_000), _batch(500, 250), _batch(300, 150)]
    assert rate_after_first_batch(progress) == 2_000
    assert rate_after_first_batch(progress[:1]) is None
    assert rate_after_first_batch([]) is None
