"""When each message is due again (speed, at once, loop, a clock that stepped back), and the
figures of how well a replay kept to it: lag quantiles, rates held and asked, the failure."""

from __future__ import annotations

import pytest

from statestream.ingest.recording import (
    LagStats,
    PaceNotHeld,
    PaceTracker,
    RecordedMessage,
    schedule,
)

T = 1_795_587_330_000_000


def _recording(*offsets_s: float) -> list[RecordedMessage]:
    return [RecordedMessage(T + round(s * 1e6), "t", b"%d" % i) for i, s in enumerate(offsets_s)]


def _dues(messages: list[RecordedMessage], speed: float, limit: int | None = None) -> list:
    timed = schedule(lambda: messages, speed=speed, loop=limit is not None)
    out = []
    for item in timed:
        out.append((round(item.due_s, 6), item.message.payload, item.pass_offset_us))
        if limit is not None and len(out) == limit:
            break
    return out


def test_the_recordings_spacing_scaled_by_the_speed() -> None:
    messages = _recording(0, 0.1, 0.1, 1.5)
    assert _dues(messages, 1.0) == [(0.0, b"0", 0), (0.1, b"1", 0), (0.1, b"2", 0), (1.5, b"3", 0)]
    assert [d for d, _, _ in _dues(messages, 2.0)] == [0.0, 0.05, 0.05, 0.75]
    assert [d for d, _, _ in _dues(messages, 0.5)] == [0.0, 0.2, 0.2, 3.0]
    assert [d for d, _, _ in _dues(messages, 0)] == [0.0] * 4  # as fast as possible


def test_a_message_received_before_the_one_ahead_is_due_with_it() -> None:
    assert [d for d, _, _ in _dues(_recording(0, 1, 0.5, 2), 1.0)] == [0.0, 1.0, 1.0, 2.0]


def test_a_loop_starts_again_after_the_mean_interval_and_moves_each_pass_on() -> None:
    dues = _dues(_recording(10, 11, 13), 1.0, limit=7)  # the first receive time is no matter
    assert dues == [
        (0.0, b"0", 0), (1.0, b"1", 0), (3.0, b"2", 0),
        (4.5, b"0", 4_500_000), (5.5, b"1", 4_500_000), (7.5, b"2", 4_500_000),
        (9.0, b"0", 9_000_000),
    ]  # fmt: skip
    assert [d for d, _, _ in _dues(_recording(5), 2.0, limit=3)] == [0.0, 0.5, 1.0]


def test_an_empty_recording_ends_even_in_a_loop() -> None:
    assert list(schedule(list, speed=1.0, loop=True)) == []


def test_a_negative_speed_is_refused() -> None:
    with pytest.raises(ValueError, match="speed"):
        list(schedule(list, speed=-1.0, loop=False))


def test_lag_quantiles_are_the_nearest_rank_in_milliseconds() -> None:
    lag = LagStats()
    for ms in [*range(1, 101)]:
        lag.add(ms / 1000)
    lag.add(-0.5)  # early: on time
    assert lag.count == 101
    assert lag.quantile_s(0.5) == pytest.approx(0.050)
    assert lag.quantile_s(0.99) == pytest.approx(0.099)
    assert lag.max_s == pytest.approx(0.1)
    other = LagStats()
    other.add(2.0)
    lag.merge(other)
    assert lag.count == 102 and lag.max_s == 2.0 and lag.quantile_s(1.0) == 2.0
    assert LagStats().quantile_s(0.99) == 0.0


def test_the_rate_held_against_the_rate_asked_and_the_failure_says_what_it_held() -> None:
    tracker = PaceTracker(speed=2.0)
    for i in range(11):  # due every 0.1 s: 10 messages/s asked, the recording's 5/s × 2
        tracker.sent(i * 0.1, i * 0.2)  # sent every 0.2 s: 5/s held, ever later
    figures = tracker.figures()
    assert figures.messages == 11
    assert figures.asked_per_s == pytest.approx(10.0)
    assert figures.recording_per_s == pytest.approx(5.0)
    assert figures.held_per_s == pytest.approx(5.0)
    assert figures.lag.max_s == pytest.approx(1.0)
    assert figures.held(1.0) and not figures.held(0.5)
    with pytest.raises(PaceNotHeld) as failed:
        figures.check(0.5, 2.0)
    assert str(failed.value) == (
        "the replay could not hold the recording's pace: held 5.0 messages/s of 10.0 asked "
        "(the recording's 5.0/s × speed 2); lag behind the recording's clock p50 500 ms, "
        "p99 1,000 ms, max 1,000 ms (allowed p99: 500 ms)"
    )


def test_as_fast_as_possible_asks_no_rate_and_always_holds() -> None:
    tracker = PaceTracker(speed=0)
    for i in range(5):
        tracker.sent(0.0, i * 0.5)
    figures = tracker.figures()
    assert figures.asked_per_s is None and figures.held(0.0)
    assert figures.held_per_s == pytest.approx(4 / 2.0)
    assert figures.describe(0) == "2 messages/s (as fast as possible)"


def test_the_figures_of_copies_side_by_side_add_up() -> None:
    a, b = PaceTracker(1.0), PaceTracker(1.0)
    for i in range(3):
        a.sent(i, i + 0.01)
        b.sent(i, i + 0.2)
    both = a.figures().merged(b.figures())
    assert both.messages == 6 and both.copies == 2
    assert both.asked_per_s == pytest.approx(2.0) and both.held_per_s == pytest.approx(2.0)
    assert both.recording_per_s == pytest.approx(1.0)
    assert both.lag.max_s == pytest.approx(0.2)
    assert "(the recording's 1.0/s × speed 1 × 2 copies)" in both.describe(1.0)
