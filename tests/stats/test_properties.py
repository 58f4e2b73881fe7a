"""Property: for any arrival order and batch split, the windows equal the pandas reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.stats import StatsSpec
from statestream.stats.reference import power_frame, reference_statistics
from tests.stats.driver import BASE_MS, run_statistics

# short windows and few distinct times make ties, window edges and late records common
SPEC = StatsSpec(
    rated_power_w=100.0,
    window_ms=4_000,
    duty_window_ms=6_000,
    duty_slide_ms=2_000,
    sampling_interval_s=0.5,
    out_of_orderness_ms=1_000,
    allowed_lateness_ms=3_000,
)
_record = st.tuples(
    st.sampled_from(["A", "B"]),
    st.sampled_from(["C11", "C12"]),
    st.integers(0, 40).map(lambda t: BASE_MS + t * 500.0),
    st.sampled_from([0.0, 19.0, 20.0, 55.0, 80.0, -90.0, 130.0]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, max_size=60), st.integers(1, 20), st.booleans())
def test_any_order_and_split_equals_the_reference(records, batch_size, restore) -> None:
    frame = pd.DataFrame(records, columns=["thing", "component", "t", "power"])
    expected = reference_statistics(frame, SPEC)
    got = run_statistics(frame, SPEC, batch_size=batch_size, restore=restore)
    assert got.late == expected.late.tolist()
    assert got.levels == expected.levels
    assert got.duty == pytest.approx(expected.duty)
    assert all(np.isfinite(list(got.duty.values())))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, max_size=60))
def test_the_pairs_frame_with_categories_gives_the_reference_of_plain_strings(records) -> None:
    """`power_frame` (what chaos checks with: thing and component as categories) changes no
    figure of the reference."""
    pairs = [
        {"thing": thing, "quantity": f"power_{component}", "phenomenonTime": t, "result": power}
        for thing, component, t, power in records
    ]
    plain = pd.DataFrame(records, columns=["thing", "component", "t", "power"])
    expected = reference_statistics(plain, SPEC)
    got = reference_statistics(power_frame(pairs), SPEC)
    assert got.late.tolist() == expected.late.tolist()
    assert (got.levels, got.duty) == (expected.levels, expected.duty)
