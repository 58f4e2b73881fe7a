"""The end of a chaos run's load: what it waits for, and how long it idles (`chaos.arrivals`)."""

from __future__ import annotations

import numpy as np

from statestream.chaos.arrivals import AT_RISK_IDLE_S, FORWARD_IDLE_S, Awaited, idle_limit


def _awaited(keys: list[int], at_risk: list[bool] | None = None) -> Awaited:
    risk = None if at_risk is None else np.array(at_risk, bool)
    return Awaited("topic", np.array(keys, np.int64), int, risk)


def test_records_a_mosquitto_kill_may_have_taken_are_awaited_apart() -> None:
    wait = _awaited([5, 6, 7, 8], [False, True, True, False])
    assert (wait.missing, wait.missing_at_risk) == (2, 2)
    wait.seen([b"6", b"5", b"6"])  # one of each kind, one twice
    assert (wait.missing, wait.missing_at_risk) == (1, 1)
    assert idle_limit([wait]) == FORWARD_IDLE_S  # 8 is sure to come
    wait.seen([b"8"])
    assert idle_limit([wait]) == AT_RISK_IDLE_S  # only 7, which the kill may have taken
    wait.seen([b"7"])
    assert not wait.waiting and idle_limit([wait]) == 0.0


def test_a_key_both_at_risk_and_not_is_sure_to_come() -> None:
    """The same record key from a row in a loss window and from one outside it: the second
    cannot have died with the broker."""
    wait = _awaited([3, 3, 4], [True, False, True])
    assert (wait.missing, wait.missing_at_risk) == (1, 1)


def test_without_a_kill_every_record_is_sure_to_come() -> None:
    wait = _awaited([1, 2, 2])
    assert (wait.missing, wait.missing_at_risk) == (2, 0)
    assert idle_limit([wait, _awaited([9], [True])]) == FORWARD_IDLE_S
