"""Mosquitto's loss window: the lost rows a kill -9 of the broker explains, and those it does not.

Mosquitto (2.0) sends PUBACK while it handles a PUBLISH and writes its persistence file only
after its loop's pass, on its save schedule (`mqtt.save_after_changes`; by default once a
minute). A kill -9 therefore loses what it had acknowledged since its last save and had not yet
passed on to the connector. Every other part of the pipeline loses nothing it acknowledged.

So a row acknowledged by the broker *after* Mosquitto's last save before a kill, and up to that
kill, is in the kill's window; a lost row acknowledged at any other moment (or never: the
publisher still had it) is a real loss, and fails the run. The save time is the persistence
file's modification time, read just before the kill: the file is written after the pass whose
acknowledgements it holds, so a row acknowledged before it was in it.

    >>> kill = BrokerKill(at=100.0, saved_at=40.0)
    >>> kill.covers(60.0), kill.covers(30.0), kill.covers(100.2), kill.covers(float("nan"))
    (True, False, True, False)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# acknowledgements read by the publisher's thread this long after the kill were still sent by
# the killed broker (a new one is started no sooner than the schedule's shortest down time)
READ_LATE_S = 0.5


@dataclass(frozen=True)
class BrokerKill:
    """A kill -9 of Mosquitto at `at`, its store last saved at `saved_at` (wall-clock seconds;
    0.0 when it had never saved)."""

    at: float
    saved_at: float

    def covers(self, acknowledged_at: float) -> bool:
        """Whether a row acknowledged at that moment was acknowledged and not yet saved."""
        return self.saved_at < acknowledged_at <= self.at + READ_LATE_S


@dataclass(frozen=True)
class WindowLoss:
    """What one Mosquitto kill lost: rows it had acknowledged since its last save, and of those
    the rows (and their records) that never reached Kafka."""

    killed_at_s: float  # after the load started
    unsaved_s: float  # how long before the kill it had last saved
    rows_acknowledged: int
    rows_lost: int
    records_lost: int

    def to_json(self) -> dict[str, float | int]:
        return {
            "killed_at_s": round(self.killed_at_s, 3),
            "unsaved_s": round(self.unsaved_s, 3),
            "rows_acknowledged": self.rows_acknowledged,
            "rows_lost": self.rows_lost,
            "records_lost": self.records_lost,
        }


def window_losses(
    kills: Sequence[BrokerKill],
    acknowledged_at: Sequence[float],
    lost_records: Sequence[int] | np.ndarray,
    started_at: float,
) -> list[WindowLoss]:
    """One `WindowLoss` per kill; `lost_records[i]` is how many records of row i are missing,
    `acknowledged_at[i]` when the broker acknowledged row i (NaN: never)."""
    at, lost = np.asarray(acknowledged_at, float), np.asarray(lost_records, np.int64)
    losses = []
    for kill in kills:
        covered = _covered(kill, at)
        losses.append(
            WindowLoss(
                killed_at_s=kill.at - started_at,
                unsaved_s=kill.at - kill.saved_at if kill.saved_at else math.inf,
                rows_acknowledged=int(covered.sum()),
                rows_lost=int((lost[covered] > 0).sum()),
                records_lost=int(lost[covered].sum()),
            )
        )
    return losses


def lost_outside(
    kills: Sequence[BrokerKill],
    acknowledged_at: Sequence[float],
    lost_records: Sequence[int] | np.ndarray,
) -> int:
    """Records missing from rows that no Mosquitto kill explains."""
    explained = in_a_window(kills, acknowledged_at)
    return int(np.asarray(lost_records, np.int64)[~explained].sum())


def in_a_window(kills: Sequence[BrokerKill], acknowledged_at: Sequence[float]) -> np.ndarray:
    """Per row, whether a Mosquitto kill's window covers its acknowledgement: a row that may
    have died with the broker.

    >>> in_a_window([BrokerKill(at=100.0, saved_at=40.0)], [30.0, 60.0, float("nan")]).tolist()
    [False, True, False]
    """
    at = np.asarray(acknowledged_at, float)
    covered = np.zeros(len(at), bool)
    for kill in kills:
        covered |= _covered(kill, at)
    return covered


def _covered(kill: BrokerKill, acknowledged_at: np.ndarray) -> np.ndarray:
    """`BrokerKill.covers` over an array (NaN compares False: never acknowledged)."""
    return (acknowledged_at > kill.saved_at) & (acknowledged_at <= kill.at + READ_LATE_S)
