"""The windows of one numeric series on hand-made records with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from statestream.errors import ConfigError
from statestream.queries.quantity_stats.records import window_records
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import (
    QuantityStateError,
    QuantityStep,
    QuantityWindows,
)

BASE_MS = 1_554_096_000_000  # a whole minute (epoch ms)
SPEC = QuantitySpec(out_of_orderness_ms=5_000, allowed_lateness_ms=30_000)


def feed(series: QuantityWindows, *records: tuple[float, float]) -> QuantityStep:
    """One call with (seconds after BASE_MS, value) records."""
    seconds, values = zip(*records, strict=True)
    return series.process(BASE_MS + np.array(seconds) * 1000.0, np.array(values))


def emitted(step: QuantityStep) -> list[tuple[int, int, float, float, float, float]]:
    """The emitted windows as (start s after BASE_MS, count, min, max, mean, last)."""
    columns = (step.counts, step.mins, step.maxs, step.means, step.lasts)
    starts = ((step.starts - BASE_MS) // 1000).tolist()
    return list(zip(starts, *(c.tolist() for c in columns), strict=True))


def test_count_min_max_mean_and_last_of_one_window() -> None:
    series = QuantityWindows(SPEC)
    assert emitted(feed(series, (1, 4.0), (50, -2.0), (30, 10.0), (20, 0.5))) == []
    step = feed(series, (65, 7.0))  # watermark 60 s: the first minute is complete
    assert emitted(step) == [(0, 4, -2.0, 10.0, 12.5 / 4, -2.0)]  # last: the value at 50 s


def test_on_an_equal_time_the_later_record_is_the_last() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (30, 1.0), (30, 2.0), (10, 5.0))
    feed(series, (30, 3.0), (29, 4.0))
    assert emitted(feed(series, (65, 0.0))) == [(0, 5, 1.0, 5.0, 3.0, 3.0)]


def test_the_sum_is_taken_record_by_record_across_calls() -> None:
    """1e16 + 1 rounds to 1e16: the two ones are lost one by one, as in a single call."""
    series = QuantityWindows(SPEC)
    feed(series, (1, 1e16))
    feed(series, (2, 1.0), (3, 1.0))
    assert series.sums.tolist() == [1e16]
    assert emitted(feed(series, (65, 0.0)))[0][4] == 1e16 / 3


def test_a_window_is_emitted_when_the_watermark_reaches_its_end_not_before() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (1, 1.0))
    assert emitted(feed(series, (64.999, 2.0))) == []  # watermark 59.999 s
    assert series.watermark == BASE_MS + 59_999
    assert emitted(feed(series, (65, 3.0))) == [(0, 1, 1.0, 1.0, 1.0, 1.0)]  # watermark 60 s
    assert emitted(feed(series, (66, 3.0))) == []  # passed and unchanged: not again


def test_a_late_but_allowed_record_changes_its_window_and_emits_it_again() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (10, 1.0), (70, 2.0), (130, 3.0))  # watermark 125 s: minutes 0 and 1 emitted
    step = feed(series, (95, 8.0))  # the limit is 125 − 30 = 95 s: allowed
    assert step.late.tolist() == [False]
    assert emitted(step) == [(60, 2, 2.0, 8.0, 5.0, 8.0)]  # minute 1 only, refined


def test_beyond_the_allowed_lateness_a_record_is_late_and_changes_nothing() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (10, 1.0), (70, 2.0), (130, 3.0))
    before = series.to_bytes()
    step = feed(series, (94.999, 8.0), (131, 4.0), (96.5, 9.0))
    assert step.late.tolist() == [True, False, False]
    assert step.watermark.tolist() == [BASE_MS + 125_000, BASE_MS + 125_000, BASE_MS + 126_000]
    assert emitted(step) == [(60, 2, 2.0, 9.0, 5.5, 9.0)]  # only the allowed one at 96.5 s
    late = QuantityWindows.from_bytes(SPEC, before)
    feed(late, (94.999, 8.0))
    assert late.to_bytes() == before


def test_windows_no_record_can_change_are_purged() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (10, 1.0), (70, 2.0))
    feed(series, (94.999, 3.0))  # watermark 89.999 s: minute 0 can still change until 90 s
    assert series.open_windows == 2
    feed(series, (95, 3.0))  # watermark 90 s: a record before 60 s is late now
    assert series.open_windows == 1
    assert feed(series, (59.999, 5.0)).late.tolist() == [True]


def test_the_state_goes_through_bytes_unchanged() -> None:
    records = [(1, 4.0), (50, -2.0), (70, 0.1), (70, 0.2), (125, 1e16), (126, 1.0)]
    kept, restored = QuantityWindows(SPEC), QuantityWindows(SPEC)
    feed(kept, *records)
    feed(restored, *records)
    restored = QuantityWindows.from_bytes(SPEC, restored.to_bytes())
    assert restored.to_bytes() == kept.to_bytes()
    assert (restored.max_time, restored.open_windows) == (kept.max_time, kept.open_windows)
    more = [(100, -1e16), (190, 3.0), (250, 5.0)]
    assert emitted(feed(restored, *more)) == emitted(feed(kept, *more))
    assert restored.to_bytes() == kept.to_bytes()


def test_an_empty_state_goes_through_bytes() -> None:
    empty = QuantityWindows.from_bytes(SPEC, QuantityWindows(SPEC).to_bytes())
    assert (empty.max_time, empty.open_windows) == (-np.inf, 0)
    step = empty.process(np.empty(0), np.empty(0))
    assert (len(step.late), len(step.starts)) == (0, 0)


def test_state_of_other_windows_or_damaged_is_refused() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (1, 1.0), (70, 2.0))
    data = series.to_bytes()
    with pytest.raises(QuantityStateError, match="new checkpoint"):
        QuantityWindows.from_bytes(QuantitySpec(window_ms=30_000), data)
    for damaged in (data[:-8], data[:-3], data[:16], data + bytes(8)):
        with pytest.raises(QuantityStateError, match="new checkpoint"):
            QuantityWindows.from_bytes(SPEC, damaged)
    other_version = np.frombuffer(data, dtype=np.float64).copy()
    other_version[0] = 99.0
    with pytest.raises(QuantityStateError, match="format"):
        QuantityWindows.from_bytes(SPEC, other_version.tobytes())


def test_lateness_and_out_of_orderness_do_not_bind_the_stored_state() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (1, 1.0))
    other = QuantitySpec(out_of_orderness_ms=0, allowed_lateness_ms=0)
    assert QuantityWindows.from_bytes(other, series.to_bytes()).open_windows == 1


@pytest.mark.parametrize(
    "settings",
    [{"window_ms": 0}, {"out_of_orderness_ms": -1.0}, {"allowed_lateness_ms": -0.5}],
)
def test_invalid_settings_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        QuantitySpec(**settings)


def test_a_window_record_has_its_key_and_fields() -> None:
    series = QuantityWindows(SPEC)
    feed(series, (1, 4.0), (50, -2.0))
    step = feed(series, (65, 7.0))
    [(key, value)] = window_records("R0815", "temperature", step, SPEC)
    assert key == f"R0815.temperature.{BASE_MS}"
    assert json.loads(value) == {
        "thing": "R0815",
        "quantity": "temperature",
        "window_start": BASE_MS,
        "window_end": BASE_MS + 60_000,
        "count": 2,
        "min": -2.0,
        "max": 4.0,
        "mean": 1.0,
        "last": -2.0,
    }
    assert isinstance(json.loads(value)["count"], int)


def test_a_mean_that_overflowed_is_null() -> None:
    series = QuantityWindows(QuantitySpec(out_of_orderness_ms=0, allowed_lateness_ms=0))
    step = feed(series, (1, 1.7e308), (2, 1.7e308), (60, 0.0))
    [(_, value)] = window_records("R0815", "temperature", step, SPEC)
    assert (json.loads(value)["mean"], json.loads(value)["max"]) == (None, 1.7e308)
