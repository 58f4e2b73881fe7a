"""The window statistics of one series on synthetic power series with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from statestream.stats import LEVEL_LABELS, SeriesWindows, StatsSpec, StatsStateError
from statestream.stats.reference import reference_statistics
from tests.stats.driver import BASE_MS, run_statistics, series_frame

RATED = 20_000.0
SPEC = StatsSpec(rated_power_w=RATED, out_of_orderness_ms=5_000, allowed_lateness_ms=30_000)


def _closing(frame_times: np.ndarray, after_s: float) -> np.ndarray:
    """The times plus one record late enough to close every window before `after_s`."""
    return np.concatenate((frame_times, [after_s]))


def test_half_a_minute_at_full_and_half_at_ten_percent() -> None:
    times = _closing(np.arange(60.0), 60 + 5 + 600)
    power = np.concatenate((np.full(30, RATED), np.full(30, 0.1 * RATED), [0.0]))
    out = run_statistics(series_frame(times, power), SPEC)
    levels = dict(zip(LEVEL_LABELS, out.levels[("R0815", "C11", BASE_MS)], strict=True))
    assert levels == {"0-20": 30.0, "20-40": 0.0, "40-60": 0.0, "60-80": 0.0, "80-100": 30.0}


def test_each_level_band_and_its_edges() -> None:
    shares = [0.0, 0.1999, 0.2, 0.45, 0.6, 0.7999, 0.8, 1.0, 1.3, -0.5, -0.9]
    times = _closing(np.arange(len(shares), dtype=float), 200)
    power = np.array([*shares, 0.0]) * RATED
    out = run_statistics(series_frame(times, power), SPEC)
    assert out.levels[("R0815", "C11", BASE_MS)] == [2.0, 1.0, 2.0, 2.0, 4.0]


@pytest.mark.parametrize(("high_seconds", "alert"), [(239, False), (240, False), (241, True)])
def test_duty_cycle_just_below_at_and_just_above_the_limit(high_seconds: int, alert: bool) -> None:
    """241 s of 600 s at ≥ 80 % is 40.2 %: above the 40 % limit; 240 s is at it, not above."""
    times = _closing(np.arange(600.0), 600 + 5 + 600 + 30)
    power = np.where(np.arange(600) < high_seconds, 0.85 * RATED, 0.5 * RATED)
    out = run_statistics(series_frame(times, np.append(power, 0.0)), SPEC)
    duty = out.duty[("R0815", "C11", BASE_MS)]
    assert duty == pytest.approx(high_seconds / 600)
    assert max(out.duty.values()) == duty  # no window holds more of the high minutes
    assert (duty > SPEC.duty_limit) is alert


def test_a_window_is_emitted_when_the_watermark_passes_its_end() -> None:
    series = SeriesWindows(SPEC)
    series.process(np.array([BASE_MS + 1_000.0]), np.array([RATED]))
    step = series.process(np.array([BASE_MS + 64_999.0]), np.array([RATED]))  # watermark 59.999 s
    assert len(step.level_starts) == 0
    step = series.process(np.array([BASE_MS + 65_000.0]), np.array([RATED]))  # watermark 60 s
    assert step.level_starts.tolist() == [BASE_MS]


def _shuffled_within(times: np.ndarray, disorder_s: float, seed: int) -> np.ndarray:
    """A permutation of in-order `times` in which no record follows one more than
    `disorder_s` younger: sort by time plus a random delay of at most `disorder_s`."""
    rng = np.random.default_rng(seed)
    return np.argsort(times + rng.uniform(0, disorder_s, len(times)), kind="stable")


def _sawtooth(seconds: int) -> tuple[np.ndarray, np.ndarray]:
    times = np.arange(float(seconds))
    power = RATED * (np.arange(seconds) % 97) / 80.0  # every level, often ≥ 80 %
    return times, power


def test_out_of_order_within_the_out_of_orderness_gives_the_same_emissions() -> None:
    times, power = _sawtooth(1800)
    order = _shuffled_within(times, 4.9, seed=1)
    assert (np.diff(order) < 0).any()
    in_order = run_statistics(series_frame(times, power), SPEC, batch_size=1)
    shuffled = run_statistics(series_frame(times[order], power[order]), SPEC, batch_size=1)
    assert sorted(shuffled.level_emissions) == sorted(in_order.level_emissions)
    assert sorted(shuffled.duty_emissions) == sorted(in_order.duty_emissions)
    assert len(in_order.levels) == len(in_order.level_emissions)  # each window once
    assert not any(shuffled.late)


def test_within_the_allowed_lateness_late_data_refines_windows() -> None:
    times, power = _sawtooth(1800)
    order = _shuffled_within(times, 30.0, seed=2)
    in_order = run_statistics(series_frame(times, power), SPEC, batch_size=7)
    shuffled = run_statistics(series_frame(times[order], power[order]), SPEC, batch_size=7)
    assert not any(shuffled.late)
    assert len(shuffled.level_emissions) > len(shuffled.levels)  # some windows were refined
    assert shuffled.levels == in_order.levels
    assert shuffled.duty == pytest.approx(in_order.duty)


def test_beyond_the_allowed_lateness_a_record_is_late_and_changes_no_window() -> None:
    times, power = _sawtooth(900)
    stray_time, stray_power = 100.0, RATED  # arrives when the series is at 800 s
    at = 800
    with_stray = series_frame(np.insert(times, at, stray_time), np.insert(power, at, stray_power))
    out = run_statistics(with_stray, SPEC, batch_size=13)
    clean = run_statistics(series_frame(times, power), SPEC, batch_size=13)
    assert [i for i, late in enumerate(out.late) if late] == [at]
    assert out.level_emissions == clean.level_emissions
    assert out.duty_emissions == clean.duty_emissions


def test_state_stays_bounded_on_a_long_series() -> None:
    series = SeriesWindows(SPEC)
    times, power = _sawtooth(6 * 3600)
    for first in range(0, len(times), 500):
        series.process(BASE_MS + times[first : first + 500] * 1000, power[first : first + 500])
    # (out-of-orderness + lateness) / window + 1 level windows; (duty window + …) / slide panes
    assert series.open_windows <= 2 + 12


def test_state_written_with_other_windows_is_refused() -> None:
    series = SeriesWindows(SPEC)
    series.process(np.array([BASE_MS + 1.0]), np.array([1.0]))
    other = StatsSpec(window_ms=30_000)
    with pytest.raises(StatsStateError, match="new checkpoint"):
        SeriesWindows.from_bytes(other, series.to_bytes())
    with pytest.raises(StatsStateError):
        SeriesWindows.from_bytes(SPEC, series.to_bytes()[:-8])


def test_matches_the_pandas_reference_on_many_series() -> None:
    rng = np.random.default_rng(7)
    frames = []
    for thing, component in [("A", "C11"), ("A", "C12"), ("B", "C11")]:
        times, power = _sawtooth(2400)
        power = power * rng.uniform(0.5, 1.2)
        order = _shuffled_within(times, rng.choice([3.0, 30.0, 120.0]), seed=int(rng.integers(99)))
        frames.append(series_frame(times[order], power[order], thing, component))
    records = pd.concat(frames, ignore_index=True)
    arrival = np.concatenate([np.sort(rng.uniform(size=len(f))) for f in frames])
    records = records.iloc[np.argsort(arrival, kind="stable")]  # the series interleaved
    expected = reference_statistics(records, SPEC)
    got = run_statistics(records, SPEC, batch_size=257)
    assert got.late == expected.late.tolist()
    assert any(got.late)
    assert got.levels == expected.levels
    assert got.duty == pytest.approx(expected.duty)
