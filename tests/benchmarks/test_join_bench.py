"""`bench join --things N`: the input it spreads over N things, and the figures it reports."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.join_bench import SAMPLE_SPEC, baseline, engine_many, run_things, spread_sample


@pytest.mark.parametrize(("records", "things"), [(3_000, 1), (3_000, 7), (5_000, 500)])
def test_the_sample_is_spread_over_the_things_asked_for(records: int, things: int) -> None:
    columns = spread_sample(records, things)
    assert len(columns) == records
    names, counts = np.unique(columns.things.astype(str), return_counts=True)
    assert len(names) == things
    assert counts.max() - counts.min() <= 1 + records // things // 10  # about records / things
    assert np.all(np.diff(columns.t) >= 0)  # arrival in time order across things
    assert 0.2 < columns.is_left.mean() < 0.6  # both series of the sample


def test_the_engine_over_many_things_finds_the_baseline_pairs() -> None:
    columns = spread_sample(20_000, 300)
    assert (
        engine_many(columns, SAMPLE_SPEC, batch=3_000).pairs == baseline(columns, SAMPLE_SPEC).pairs
    )


def test_run_things_reports_the_figures_of_one_input() -> None:
    figures = run_things(4_000, 2_000, 40)
    assert figures["things"] == 40
    assert figures["records"] == 4_000
    assert figures["baseline_records"] == 2_000
    assert figures["pairs"] > 0
    for key in ("records_per_s", "joins_per_s", "baseline_joins_per_s", "ratio", "peak_state"):
        assert figures[key] > 0
