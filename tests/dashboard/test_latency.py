"""The live latency histogram: fixed log-spaced buckets over a sliding window."""

from __future__ import annotations

import doctest
from itertools import pairwise

import pytest

from statestream.dashboard import latency
from statestream.dashboard.latency import (
    EDGES_S,
    LatencyHistogram,
    bucket_labels,
    bucket_of,
    pair_latency_s,
    quantile_bucket,
)


def test_the_buckets_are_one_two_five_of_each_decade() -> None:
    assert EDGES_S[:4] == (0.01, 0.02, 0.05, 0.1)
    assert EDGES_S[-1] == 500.0
    for low, high in pairwise(EDGES_S):
        assert high / low in (pytest.approx(2.0), pytest.approx(2.5))
    assert len(bucket_labels()) == len(EDGES_S) + 1


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (-3.0, "< 10 ms"),  # a producer's clock ahead of the dashboard's
        (0.0, "< 10 ms"),
        (0.01, "10–20 ms"),  # an edge starts its bucket
        (0.35, "200–500 ms"),
        (0.5, "0.5–1 s"),
        (1.0, "1–2 s"),
        (499.9, "200–500 s"),
        (3600.0, "≥ 500 s"),
    ],
)
def test_a_latency_falls_in_its_bucket(seconds: float, label: str) -> None:
    assert bucket_labels()[bucket_of(seconds)] == label


def test_the_histogram_counts_over_its_window_only() -> None:
    histogram = LatencyHistogram(window_s=10.0, slot_s=1.0)
    histogram.add(0.3, now=100.2)
    histogram.add(0.3, now=100.7)
    histogram.add(2.5, now=105.0)
    counts = histogram.counts(now=105.5)
    assert sum(counts) == 3
    assert counts[bucket_of(0.3)] == 2 and counts[bucket_of(2.5)] == 1
    assert sum(histogram.counts(now=111.5)) == 1  # the slot of 100 s has left the window
    assert sum(histogram.counts(now=116.0)) == 0


def test_the_snapshot_says_where_median_and_p99_are() -> None:
    histogram = LatencyHistogram()
    for _ in range(98):
        histogram.add(0.15, now=0.0)
    histogram.add(3.0, now=0.0)
    histogram.add(30.0, now=0.0)
    figures = histogram.snapshot(now=1.0)
    labels = figures["labels"]
    assert figures["count"] == 100 and figures["window_s"] == 60.0
    assert labels[figures["p50"]] == "100–200 ms"
    assert labels[figures["p99"]] == "2–5 s"
    assert LatencyHistogram().snapshot(now=0.0)["p50"] is None


def test_quantiles_of_nothing_are_none() -> None:
    assert quantile_bucket([0, 0, 0], 0.5) is None
    assert quantile_bucket([0, 0, 1], 0.01) == 2


def test_a_pair_is_as_late_as_its_later_record() -> None:
    pair = {
        "phenomenonTime": 1250,
        "left": {"quantity": "actSpeed_C11", "phenomenonTime": 1000, "result": 1.0},
        "right": {"quantity": "vaTorque_C11", "phenomenonTime": 1500, "result": 2.0},
    }
    assert pair_latency_s(pair, now_ms=3500) == 2.0
    assert pair_latency_s({"left": {"phenomenonTime": 1}}, now_ms=5) is None
    assert pair_latency_s({"left": {"phenomenonTime": True}, "right": {}}, now_ms=5) is None


def test_docstring_examples() -> None:
    result = doctest.testmod(latency)
    assert result.attempted > 0 and result.failed == 0
