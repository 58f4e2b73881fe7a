"""Which lost rows a Mosquitto kill explains: those the broker acknowledged after its last save
and up to the kill; every other lost row is a real loss."""

from __future__ import annotations

import math

from statestream.chaos.loss_window import (
    READ_LATE_S,
    BrokerKill,
    in_a_window,
    lost_outside,
    window_losses,
)

NEVER = math.nan
START = 1_000.0


def test_a_row_acknowledged_after_the_last_save_is_the_kills_and_before_it_is_not() -> None:
    kill = BrokerKill(at=START + 30.0, saved_at=START + 20.0)
    acknowledged = [START + 10.0, START + 25.0, START + 29.9, START + 31.0, NEVER]
    lost = [4, 0, 3, 0, 0]  # records missing per row: row 0 (saved, then lost) and row 2
    assert lost_outside([kill], acknowledged, lost) == 4  # row 0's: it was in the save
    [window] = window_losses([kill], acknowledged, lost, START)
    assert (window.killed_at_s, window.unsaved_s) == (30.0, 10.0)
    assert (window.rows_acknowledged, window.rows_lost, window.records_lost) == (2, 1, 3)


def test_a_lost_row_never_acknowledged_is_a_real_loss() -> None:
    kill = BrokerKill(at=START + 30.0, saved_at=START + 20.0)
    assert lost_outside([kill], [NEVER, START + 21.0], [2, 0]) == 2


def test_acknowledgements_read_just_after_the_kill_came_from_the_killed_broker() -> None:
    kill = BrokerKill(at=START + 30.0, saved_at=START + 20.0)
    late, too_late = START + 30.0 + READ_LATE_S / 2, START + 30.0 + 2 * READ_LATE_S
    assert lost_outside([kill], [late, too_late], [1, 1]) == 1  # the second one's broker is new


def test_each_kill_has_its_window_and_a_broker_that_never_saved_loses_from_its_start() -> None:
    first = BrokerKill(at=START + 10.0, saved_at=0.0)  # never saved
    second = BrokerKill(at=START + 40.0, saved_at=START + 35.0)
    acknowledged = [START + 1.0, START + 20.0, START + 36.0]
    lost = [1, 1, 1]
    windows = window_losses([first, second], acknowledged, lost, START)
    assert [w.records_lost for w in windows] == [1, 1]
    assert windows[0].unsaved_s == math.inf
    assert lost_outside([first, second], acknowledged, lost) == 1  # row 1: between the two


def test_the_rows_a_kill_may_have_taken_are_those_its_window_covers() -> None:
    """What the end of the load awaits only briefly (`arrivals`): the rows of the windows."""
    kills = [BrokerKill(START + 30.0, START + 20.0), BrokerKill(START + 90.0, START + 80.0)]
    acknowledged = [START + 10.0, START + 25.0, START + 50.0, START + 85.0, NEVER]
    assert in_a_window(kills, acknowledged).tolist() == [False, True, False, True, False]
    assert in_a_window([], acknowledged).tolist() == [False] * 5
