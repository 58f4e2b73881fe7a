"""The display policy: newer-or-same event time replaces, older never; expiry after window + 5 s."""

from __future__ import annotations

import pytest

from statestream.dashboard import EXPIRY_GRACE_S, ResultBoard, WindowResult

MINUTE = 60_000


def levels(start: int, seconds: float = 1.0, thing: str = "R1", component: str = "C11"):
    values = {"0-20": seconds}
    return WindowResult(thing, component, "levels", start, start + MINUTE, values)


def duty(start: int, value: float):
    return WindowResult(
        "R1", "C11", "duty_cycle", start, start + 10 * MINUTE, {"duty_cycle": value}
    )


@pytest.fixture
def board() -> ResultBoard:
    return ResultBoard({"levels": 60.0, "duty_cycle": 600.0})


def test_a_newer_window_replaces_the_shown_one(board: ResultBoard) -> None:
    assert board.offer(levels(0, 1.0), now=0.0)
    assert board.offer(levels(MINUTE, 2.0), now=1.0)
    assert board.shown() == [levels(MINUTE, 2.0)]


def test_a_result_for_the_same_window_replaces_it(board: ResultBoard) -> None:
    """A window refined by late data within the allowed lateness replaces the earlier value."""
    board.offer(levels(MINUTE, 1.0), now=0.0)
    assert board.offer(levels(MINUTE, 7.0), now=1.0)
    assert board.shown() == [levels(MINUTE, 7.0)]


def test_an_older_window_never_replaces_a_newer_one(board: ResultBoard) -> None:
    board.offer(levels(2 * MINUTE, 1.0), now=0.0)
    assert not board.offer(levels(MINUTE, 9.0), now=1.0)
    assert board.shown() == [levels(2 * MINUTE, 1.0)]


def test_results_of_other_things_components_and_kinds_are_independent(board: ResultBoard) -> None:
    board.offer(levels(2 * MINUTE), now=0.0)
    assert board.offer(levels(MINUTE, thing="R2"), now=0.0)
    assert board.offer(levels(MINUTE, component="C12"), now=0.0)
    assert board.offer(duty(0, 0.3), now=0.0)
    assert [r.key for r in board.shown()] == [
        "R1.C11.duty_cycle",
        "R1.C11.levels",
        "R1.C12.levels",
        "R2.C11.levels",
    ]


def test_a_result_expires_after_its_window_length_plus_five_seconds(board: ResultBoard) -> None:
    board.offer(levels(0), now=100.0)
    board.offer(duty(0, 0.3), now=100.0)
    assert board.expire(now=100.0 + 60.0 + EXPIRY_GRACE_S - 0.01) == []
    assert board.expire(now=100.0 + 60.0 + EXPIRY_GRACE_S) == ["R1.C11.levels"]
    assert board.expire(now=100.0 + 600.0 + EXPIRY_GRACE_S) == ["R1.C11.duty_cycle"]
    assert board.shown() == []


def test_a_replacing_result_starts_a_new_lifetime(board: ResultBoard) -> None:
    board.offer(levels(0), now=0.0)
    board.offer(levels(MINUTE), now=50.0)
    assert board.expire(now=70.0) == []
    assert board.expire(now=115.0) == ["R1.C11.levels"]


def test_a_refused_result_does_not_extend_the_shown_one(board: ResultBoard) -> None:
    board.offer(levels(MINUTE), now=0.0)
    board.offer(levels(0), now=50.0)
    assert board.expire(now=65.0) == ["R1.C11.levels"]


def test_after_expiry_an_older_window_may_be_shown_again(board: ResultBoard) -> None:
    """Expired means gone: the next result for the key is shown, whatever its window."""
    board.offer(levels(MINUTE), now=0.0)
    board.expire(now=65.0)
    assert board.offer(levels(0), now=66.0)


def test_messages_carry_the_seconds_left(board: ResultBoard) -> None:
    board.offer(duty(0, 0.45), now=10.0)
    [message] = board.messages(now=20.0)
    assert message == {
        "key": "R1.C11.duty_cycle",
        "thing": "R1",
        "component": "C11",
        "kind": "duty_cycle",
        "window_start": 0,
        "window_end": 10 * MINUTE,
        "values": {"duty_cycle": 0.45},
        "expires_in_s": 595.0,
    }


def test_history_shows_what_is_not_shown_and_never_extends_a_shown_window(
    board: ResultBoard,
) -> None:
    assert board.offer_history(levels(0), now=0.0)
    assert not board.offer_history(levels(0), now=50.0)  # the same window again: no new lifetime
    assert board.expire(now=65.0) == ["R1.C11.levels"]
    board.offer(levels(MINUTE, 3.0), now=70.0)
    assert not board.offer_history(levels(0), now=71.0)
    assert board.offer_history(levels(2 * MINUTE, 4.0), now=72.0)
    assert board.shown() == [levels(2 * MINUTE, 4.0)]
