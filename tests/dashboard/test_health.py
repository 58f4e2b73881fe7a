"""Pipeline health: the queries' rows with their lag, rates of topics, dead-letter reasons."""

from __future__ import annotations

import os

from statestream.dashboard.health import TopicFigures, query_health, reason_of
from statestream.jobs.lag import QueryLag
from statestream.jobs.status import QueryStatus


def test_a_querys_row_has_its_lag_per_partition_and_summed() -> None:
    running = QueryStatus(name="join", run_id="r1", pid=os.getpid(), process_start="x")
    running.updated = 1000.0
    waiting = QueryStatus(name="stats", run_id="r2", pid=os.getpid(), process_start="x")
    waiting.updated = 1000.0
    rows = query_health(
        [running, waiting], [QueryLag({"machine.data": {0: 3, 1: 4}}), None], now=1002.5
    )
    assert rows[0] == {
        "query": "join",
        "state": "running",
        "rows_per_s": None,
        "batch": None,
        "updated_s": 2.5,
        "lag": {"total": 7, "topics": {"machine.data": {"0": 3, "1": 4}}},
    }
    assert rows[1]["lag"] is None  # unknown: no committed batch, or no end offsets


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
