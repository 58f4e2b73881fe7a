"""One call of the streaming `asof_join`'s processor (`_asof_processor.AsofProcessor`): a
bucket's micro-batch of both sides through its `AsofStream`, kept pickled in the ValueState, and
what comes out as the processor's output rows (`_asof_stream.OUTPUT`). Also what the final flush
(`asof_flush`) gives of a stored engine. The processor imports this module on its first call.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from statestream.join.asof import AsofRule
from statestream.join.asof_stream import AsofOutput, AsofStream, Rows
from statestream.spark._asof_sides import KEY, ORDER, SIDE, TIME

LEFT_ROW, RIGHT_ROW, KIND = "asof_lrow", "asof_rrow", "asof_kind"
PAIR, LATE, NO_TIME = "pair", "late", "no time"
SIDES = ("left", "right")


def new_engine(setup: dict[str, Any]) -> AsofStream:
    return AsofStream(engine_rule(setup), setup["disorder"])


def engine_rule(setup: dict[str, Any]) -> AsofRule:
    return AsofRule(setup["direction"], setup["tolerance"], setup["allow_exact_matches"])


def joined_micro_batch(rows: Iterable[pd.DataFrame], state, setup: dict[str, Any]) -> pd.DataFrame:
    """One call of `AsofProcessor`: a bucket's micro-batch through its engine (`state`: the
    ValueState), the output rows: pairs (left row, matched right row or null) and refused rows."""
    frame = pd.concat(list(rows), ignore_index=True)
    engine, next_order = _load(state, setup)
    numbered = _numbered(frame, next_order)
    next_order += len(frame)
    timed = numbered[TIME].notna().to_numpy()
    is_left = (numbered[SIDE] == 0).to_numpy()
    out = engine.push(
        _rows(numbered[timed & is_left], LEFT_ROW, setup),
        _rows(numbered[timed & ~is_left], RIGHT_ROW, setup),
    )
    state.update((pickle.dumps({"engine": engine.to_state(), "next_order": next_order}, 5),))
    untimed = numbered[~timed]
    return pd.concat([emitted(out), _untimed(untimed)], ignore_index=True)


def _load(state, setup: dict[str, Any]) -> tuple[AsofStream, int]:
    if not state.exists():
        return new_engine(setup), 0
    stored = pickle.loads(bytes(state.get()[0]))
    engine = AsofStream.from_state(engine_rule(setup), setup["disorder"], stored["engine"])
    return engine, int(stored["next_order"])


def _numbered(frame: pd.DataFrame, next_order: int) -> pd.DataFrame:
    """`frame` with every row numbered from `next_order` in its arrival order: micro-batches in
    the order they come, and within one the order column (rows without one, or tied, by time,
    then as they came). So the engine's order always increases, even where the caller's order
    column does not (another partition's offsets, files read out of order)."""
    column = frame[ORDER]
    if column.isna().any():  # no order column: every row by time
        order = column.to_numpy(dtype=np.float64, na_value=np.inf)
    else:
        order = column.to_numpy(dtype=np.int64)
    times = frame[TIME].to_numpy(dtype=np.float64, na_value=np.inf)
    ranks = np.lexsort((np.arange(len(frame)), times, order))
    numbers = np.empty(len(frame), dtype=np.int64)
    numbers[ranks] = next_order + np.arange(len(frame), dtype=np.int64)
    return frame.assign(**{ORDER: numbers})


def _rows(frame: pd.DataFrame, row: str, setup: dict[str, Any]) -> Rows:
    dtype = np.int64 if setup["integer_time"] else np.float64
    return Rows(
        key=frame[KEY].to_numpy(dtype=object),
        t=frame[TIME].to_numpy(dtype=dtype),
        order=frame[ORDER].to_numpy(dtype=np.int64),
        columns={"row": frame[row].to_numpy(dtype=object)},
    )


def emitted(out: AsofOutput) -> pd.DataFrame:
    matched = np.asarray(out.matched, dtype=bool)
    right_rows = np.array(out.right.columns["row"], dtype=object)
    right_rows[~matched] = None
    pairs = pd.DataFrame(
        {KIND: PAIR, SIDE: SIDES[0], LEFT_ROW: out.left.columns["row"], RIGHT_ROW: right_rows}
    )
    late_left = _refused(out.late_left.columns["row"], 0, LATE)
    late_right = _refused(out.late_right.columns["row"], 1, LATE)
    return pd.concat([pairs, late_left, late_right], ignore_index=True)


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows without a time: a left one comes out unmatched (as in batch), a right one refused."""
    left = frame[frame[SIDE] == 0]
    unmatched = pd.DataFrame(
        {KIND: PAIR, SIDE: SIDES[0], LEFT_ROW: left[LEFT_ROW].to_numpy(), RIGHT_ROW: None}
    )
    right = _refused(frame[frame[SIDE] == 1][RIGHT_ROW].to_numpy(), 1, NO_TIME)
    return pd.concat([unmatched, right], ignore_index=True)


def _refused(rows: np.ndarray, side: int, reason: str) -> pd.DataFrame:
    left, right = (rows, None) if side == 0 else (None, rows)
    return pd.DataFrame(
        {KIND: reason, SIDE: SIDES[side], LEFT_ROW: left, RIGHT_ROW: right},
        index=pd.RangeIndex(len(rows)),
    )
