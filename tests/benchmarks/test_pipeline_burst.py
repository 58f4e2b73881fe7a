"""The burst part finds the batches that read the release, whether one trigger read it or two."""

from __future__ import annotations

from benchmarks.pipeline_burst import _batch_times, release_batches


def _batch(second: float, rows: int, ms: int = 500) -> dict:
    stamp = f"1970-01-01T00:00:{second:06.3f}Z"
    return {"timestamp": stamp, "numInputRows": rows, "durationMs": {"triggerExecution": ms}}


def test_a_release_split_by_a_trigger_is_timed_from_its_first_batch_to_its_last() -> None:
    progress = [_batch(9.0, 7), _batch(10.2, 0), _batch(10.3, 600, 400), _batch(10.8, 400, 700)]
    batches = release_batches(progress, sent=10.0, records=1_000)
    assert [b["numInputRows"] for b in batches] == [600, 400]
    times = _batch_times(batches, sent=10.0, last_seen=11.7)
    assert times == {
        "burst_batches": 2,
        "burst_batch_ms": 1200,  # 10.3 s to 11.5 s
        "burst_wait_ms": 300,
        "burst_visible_after_ms": 200,
    }


def test_a_release_read_in_one_batch_and_one_not_all_read() -> None:
    one = release_batches([_batch(10.1, 1_000), _batch(10.9, 3)], sent=10.0, records=1_000)
    assert [b["numInputRows"] for b in one] == [1_000]
    assert _batch_times(one, 10.0, None)["burst_visible_after_ms"] is None
    assert release_batches([_batch(10.1, 999)], sent=10.0, records=1_000) == []
    assert _batch_times([], 10.0, 11.0)["burst_batch_ms"] is None
