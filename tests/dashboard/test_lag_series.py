"""The queries' lag as InfluxDB points, written best effort (no InfluxDB here: a closed port)."""

from __future__ import annotations

import doctest
import logging
import time

import pytest

from statestream.config import InfluxSettings
from statestream.dashboard import lag_series
from statestream.dashboard.lag_series import LagSeries, lag_points
from statestream.jobs.lag import QueryLag
from tests.support import free_ports


def test_a_point_per_query_and_topic_with_each_partition() -> None:
    lags = {
        "stats": QueryLag({"machine.out": {0: 2}}),
        "join": QueryLag({"machine.data": {1: 4, 0: 3}, "other": {0: 0}}),
    }
    lines = [p.line("ms") for p in lag_points(lags, 1_700_000_000_000)]
    assert lines == [
        "query_lag,query=join,topic=machine.data lag=7.0,partition_0=3.0,partition_1=4.0 "
        "1700000000000",
        "query_lag,query=join,topic=other lag=0.0,partition_0=0.0 1700000000000",
        "query_lag,query=stats,topic=machine.out lag=2.0,partition_0=2.0 1700000000000",
    ]


def test_names_are_escaped_and_a_name_line_protocol_cannot_carry_is_left_out() -> None:
    lags = {"my query": QueryLag({"t": {0: 1}}), "bad\nname": QueryLag({"t": {0: 1}})}
    [point] = lag_points(lags, 0)
    assert point.line("ms").startswith("query_lag,query=my\\ query,topic=t ")


def _nowhere() -> InfluxSettings:
    [port] = free_ports(1)
    return InfluxSettings(url=f"http://127.0.0.1:{port}")


def test_a_write_that_fails_says_why() -> None:
    series = LagSeries(_nowhere())
    try:
        problem = series.write(lag_points({"join": QueryLag({"t": {0: 1}})}, 0))
    finally:
        series.stop()
    assert problem is not None and problem.startswith("no answer")


def test_one_set_per_interval_and_a_failure_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    series = LagSeries(_nowhere(), interval_s=10.0)
    written: list[int] = []
    real_write = series.write

    def write(points):  # what reaches InfluxDB: the times of the points
        written.extend(p.time_ms for p in points)
        return real_write(points)

    series.write = write  # type: ignore[method-assign]
    series.start()
    lags = {"join": QueryLag({"t": {0: 1}})}
    with caplog.at_level(logging.WARNING, logger=lag_series.__name__):
        try:
            for now in (100.0, 101.0, 109.9, 110.0, 125.0):
                series.offer(lags, now)
                time.sleep(0.3)  # the writer thread takes each set
        finally:
            series.stop()
    assert written == [100_000, 110_000, 120_000]  # rounded down to the interval, one each
    warnings = [r for r in caplog.records if "not written to InfluxDB" in r.getMessage()]
    assert len(warnings) == 1


def test_nothing_is_offered_without_a_known_lag() -> None:
    series = LagSeries(_nowhere())
    series.offer({}, 100.0)
    assert series._pending == []
    series.stop()


def test_docstring_examples() -> None:
    result = doctest.testmod(lag_series)
    assert result.attempted > 0 and result.failed == 0
