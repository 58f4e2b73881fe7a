"""The watermark of one side of the as-of stream, per key: the largest t seen, and which arriving
rows are late (see `statestream.join.asof_stream`).

Everything is computed for all keys and rows of a batch at once: the rows are sorted by (key,
order), and a running maximum over a composite (key code, rank of t) gives, for each row, the
largest t of the rows of its key before it, without a loop over keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class SideMarks:
    """Per key code, what one side has seen: its largest t, whether any row at all, and the order
    of its last row (to check that order increases)."""

    max_t: np.ndarray
    seen: np.ndarray  # bool
    last_order: np.ndarray  # int64

    @classmethod
    def empty(cls, t_dtype: npt.DTypeLike) -> SideMarks:
        return cls(np.empty(0, t_dtype), np.empty(0, bool), np.empty(0, np.int64))

    def recoded(self, remap: np.ndarray, n_keys: int, t_dtype: np.dtype) -> SideMarks:
        """The same marks on a larger key table: old code c becomes remap[c]; `t_dtype` is the
        dtype of the times now arriving (the first rows fix it)."""
        dtype = np.result_type(self.max_t.dtype, t_dtype) if self.seen.any() else t_dtype
        max_t = np.zeros(n_keys, dtype=dtype)
        seen = np.zeros(n_keys, dtype=bool)
        last_order = np.zeros(n_keys, dtype=np.int64)
        max_t[remap], seen[remap], last_order[remap] = self.max_t, self.seen, self.last_order
        return SideMarks(max_t, seen, last_order)

    def watermark(self, code: np.ndarray, disorder: float) -> tuple[np.ndarray, np.ndarray]:
        """(whether the key has any row, its watermark: largest t − disorder) per code; the
        watermark is meaningless (not −inf) where the key has no row."""
        return self.seen[code], self.max_t[code] - disorder

    def arrive(
        self, code: np.ndarray, t: np.ndarray, order: np.ndarray, disorder: float, side: str
    ) -> tuple[np.ndarray, SideMarks]:
        """Which of these rows (of one batch, in any order) are late, and the marks after them.

        A row is late when its t is below the watermark of the rows of its key before it in
        order (those of earlier batches included). Raises ValueError if order does not increase
        within a key (over the stream), which would make lateness undefined.
        """
        if len(t) == 0:
            return np.zeros(0, dtype=bool), self
        known = np.flatnonzero(self.seen)  # a stand-in row per known key: its largest t so far
        all_code = np.concatenate([known, code])
        all_t = np.concatenate([self.max_t[known], t])
        all_order = np.concatenate([self.last_order[known], order])
        is_new = np.concatenate([np.zeros(len(known), bool), np.ones(len(t), bool)])
        perm = np.lexsort((all_order, is_new, all_code))
        c, ts, o, new = all_code[perm], all_t[perm], all_order[perm], is_new[perm]
        after = np.concatenate([[False], c[1:] == c[:-1]])  # a row of its key comes before it
        _check_order(after, o, side)
        values, rank = np.unique(ts, return_inverse=True)
        width = len(values)
        running = np.maximum.accumulate(c * width + rank.reshape(-1))
        late = np.zeros(len(c), dtype=bool)
        before = running[:-1][after[1:]] - c[1:][after[1:]] * width
        late[1:][after[1:]] = ts[1:][after[1:]] < values[before] - disorder
        late_in_batch = np.empty(len(t), dtype=bool)
        late_in_batch[perm[new] - len(known)] = late[new]
        return late_in_batch, self._updated(c, o, values[running - c * width])

    def _updated(self, code: np.ndarray, order: np.ndarray, running_max: np.ndarray) -> SideMarks:
        """New marks from rows sorted by (code, order) and their running maximum of t."""
        last = np.concatenate([code[1:] != code[:-1], [True]])  # the last row of each key
        max_t = self.max_t.astype(running_max.dtype)  # a copy: marks are never changed in place
        seen, last_order = self.seen.copy(), self.last_order.copy()
        max_t[code[last]] = running_max[last]
        seen[code[last]] = True
        last_order[code[last]] = order[last]
        return SideMarks(max_t, seen, last_order)


def _check_order(after: np.ndarray, order: np.ndarray, side: str) -> None:
    """Raise ValueError if a row's order is not above that of the row of its key before it."""
    bad = np.flatnonzero(after[1:] & (order[1:] <= order[:-1]))
    if len(bad):
        i = bad[0] + 1
        raise ValueError(
            f"{side} rows: order must increase within a key over the stream; got order "
            f"{order[i]} after {order[i - 1]} (repeated, or not above an earlier push's)"
        )
