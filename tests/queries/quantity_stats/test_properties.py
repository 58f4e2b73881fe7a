"""Property: however a series is cut into calls and restored from bytes, the windows equal the
plain-Python reference's, and two cuts give the same bits."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.queries.quantity_stats.reference import WindowResult, reference_quantity_stats
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import QuantityWindows

BASE_MS = 1_554_096_000_000
# short windows and few distinct times make ties, window edges and late records common
SPEC = QuantitySpec(window_ms=4_000, out_of_orderness_ms=1_000, allowed_lateness_ms=3_000)
_value = st.one_of(
    st.sampled_from([1.0, -1.5, 0.1, 0.2, 1e16, -1e16, 3.0]),  # sums that depend on the order
    st.floats(-1e6, 1e6).map(lambda v: v + 0.0),  # no −0.0: min(0.0, −0.0) is either
)
# a clock that advances by 0–1.5 s a record; each record is up to 5 s behind it, so duplicates,
# disorder, lateness allowed and not, and records at the very limits are all common
_steps = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10), _value), max_size=60)


def records_of(steps: list[tuple[int, int, float]]) -> list[tuple[float, float]]:
    """(time, value) records in arrival order from (advance, behind, value) steps of 500 ms."""
    clock, records = 0, []
    for advance, behind, value in steps:
        clock += advance
        records.append((BASE_MS + (clock - behind) * 500.0, value))
    return records


_records = _steps.map(records_of)


@dataclass
class EngineOutcome:
    late: list[bool]
    watermarks: list[float]
    emitted: set[int]  # window starts
    latest: dict[int, WindowResult]  # the last emission of each window
    state: bytes


def run(
    times: np.ndarray, values: np.ndarray, cuts: list[int], restores: list[bool]
) -> EngineOutcome:
    """The engine over records cut into calls at `cuts`; after call i its state goes through
    bytes if `restores[i]` (cycled)."""
    series = QuantityWindows(SPEC)
    out = EngineOutcome([], [], set(), {}, b"")
    bounds = [0, *sorted(cuts), len(times)]
    for i, (first, end) in enumerate(itertools.pairwise(bounds)):
        step = series.process(times[first:end], values[first:end])
        out.late += step.late.tolist()
        out.watermarks += step.watermark.tolist()
        columns = (step.starts, step.counts, step.mins, step.maxs, step.means, step.lasts)
        for row in zip(*(c.tolist() for c in columns), strict=True):
            out.emitted.add(row[0])
            out.latest[row[0]] = WindowResult(*row)
        if restores and restores[i % len(restores)]:
            series = QuantityWindows.from_bytes(SPEC, series.to_bytes())
    out.state = series.to_bytes()
    return out


def arrays(records: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([t for t, _ in records]), np.array([v for _, v in records])


_cuts = st.lists(st.integers(0, 60), max_size=12)
_restores = st.lists(st.booleans(), max_size=8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records, _cuts, _restores)
def test_any_cut_equals_the_reference(records, cuts, restores) -> None:
    times, values = arrays(records)
    expected = reference_quantity_stats(times.tolist(), values.tolist(), SPEC)
    got = run(times, values, [min(c, len(records)) for c in cuts], restores)
    assert got.late == expected.late
    assert got.watermarks == expected.watermarks
    assert got.emitted == {w.start for w in expected.emitted}
    assert got.latest == {w.start: w for w in expected.emitted}  # the last of each start wins
    assert QuantityWindows.from_bytes(SPEC, got.state).starts.tolist() == still_open(
        times[~np.array(expected.late, dtype=bool)]
    )


def still_open(accepted: np.ndarray) -> list[int]:
    """The windows with accepted records that a record could still change."""
    horizon = accepted.max(initial=-np.inf) - SPEC.out_of_orderness_ms - SPEC.allowed_lateness_ms
    starts = {int(t // SPEC.window_ms) * SPEC.window_ms for t in accepted.tolist()}
    return sorted(s for s in starts if s + SPEC.window_ms > horizon)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records, _cuts, _restores, _cuts, _restores)
def test_any_two_cuts_give_the_same_bits(
    records, cuts, restores, other_cuts, other_restores
) -> None:
    times, values = arrays(records)
    one = run(times, values, [min(c, len(records)) for c in cuts], restores)
    other = run(times, values, [min(c, len(records)) for c in other_cuts], other_restores)
    assert one.state == other.state
    assert one.late == other.late
    assert repr(sorted(one.latest.items())) == repr(sorted(other.latest.items()))  # bit for bit
