"""The as-of join, incremental: `asof_indices` over two streams, each left row emitted once, when
its match is certain.

Every key k is joined on its own, in the vocabulary of the complement-join spec
(shared/spec/complement-join.md):

- **Watermarks.** Each side has its own watermark per key, w_X(k) = (largest t of side X seen for
  k) − disorder, −inf before any row. A row whose t is below its side's watermark on arrival (the
  watermark of the rows of that side before it in `order`) is **late**: returned in
  `late_left`/`late_right` and never joined. Lateness depends on one side's own order only, never
  on how the sides interleave or how the stream is split into pushes.
- **Release.** A right row is released once w_R(k) >= its t; released rows form the series in
  (t, order) order. Every right row still to come has t >= w_R(k) (else it is late), and one with
  t = w_R(k) comes after the released rows of that t, its order being higher.
- **Emission.** An accepted left row l is emitted, with its match, once nothing that can still
  arrive changes that match (a later right row is not late, so its t >= w_R(k)):

  - backward: w_R(k) > l.t; without exact matches w_R(k) >= l.t is enough (a later row then has
    t >= l.t, which a strict backward search does not take);
  - forward: the first right row f with t >= l.t (t > l.t when not exact) is released; with exact
    matches, also when f.t = l.t (a later row at l.t comes after f); or, with a tolerance, when
    w_R(k) − l.t > tolerance (no later row can be near enough: no match);
  - nearest: the backward condition holds and either the forward one does, or the backward
    candidate b exists with l.t − b.t <= w_R(k) − l.t (a later right row is at least as far, and
    pandas breaks a tie towards the backward row).

  Three of these are tighter than "w_R(k) > l.t" / "a released r.t >= l.t" / "both" alone, and
  safe: backward without exact matches, forward at f.t = l.t, and nearest's second case. Gaps are
  compared as differences computed like pandas computes them, so float rounding cannot emit
  early. The match is `asof_indices` of l among the rows kept (see `statestream.join.asof` for
  pandas' rules); `flush()` emits every pending left row as if w_R were +inf. Each push emits in
  (key, order) order.
- **Bounded state.** With m(k) = min(w_L(k), smallest t of k's pending left rows), no pending or
  future accepted left row has t < m(k). So the state keeps, of the right rows, those with
  t >= m(k), the unreleased ones, and (unless the direction is forward) the last released one
  with t < m(k), which a backward search may still take; the rest is dropped. Emitted left rows
  are dropped. A key whose two sides both advance keeps a handful of rows; a key whose left side
  has no row yet keeps all its right rows (a left row may come with any t).
- **No duplicate detection**: like merge_asof, equal rows are all kept and all joined.
- **Input.** `order` must increase strictly within each key of a side over the whole stream (a
  push that breaks this raises ValueError and changes nothing); t is int64 or float64, the same
  kind on both sides; NaN t is not checked: the caller rejects it before.

For the same two sides (same `order` per side), the (left row, match) pairs emitted over
push…push, flush are the same for every interleaving and split into pushes, and, when no row is
late, equal to `asof_indices` on all rows with `right_order = order`.

>>> stream = AsofStream(AsofRule("backward"))
>>> out = stream.push(Rows(["a"], [5], [0]), Rows(["a", "a"], [3, 6], [0, 1]))
>>> out.left.t, out.right.t, out.matched
(array([5]), array([3]), array([ True]))
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from statestream.join.asof import (
    AsofCandidates,
    AsofRule,
    check_times,
    choose_match,
    factorize_keys,
    find_candidates,
    gather,
)
from statestream.join.asof_marks import SideMarks
from statestream.join.asof_rows import AsofOutput, Rows

__all__ = ["AsofOutput", "AsofStream", "Rows"]

_FORMAT = 1  # the version of `to_state`'s layout


class AsofStream:
    """The as-of join of two streams of rows, many keys at once (see the module docstring).

    `key_dtype` and `t_dtype` only type the empty outputs and state before the first rows: the
    rows pushed fix the real dtypes.
    """

    def __init__(
        self,
        rule: AsofRule,
        disorder: float | int = 0,
        *,
        key_dtype: npt.DTypeLike = np.int64,
        t_dtype: npt.DTypeLike = np.int64,
    ) -> None:
        if isinstance(disorder, bool) or not isinstance(disorder, int | float | np.number):
            raise ValueError(f"disorder must be a number; got {disorder!r}")
        if not disorder >= 0:
            raise ValueError(f"disorder must be >= 0 (in the units of t); got {disorder!r}")
        self.rule = rule
        self.disorder = disorder
        self._keys = np.empty(0, dtype=key_dtype)  # every key seen, sorted; codes index it
        self._marks = {side: SideMarks.empty(t_dtype) for side in ("left", "right")}
        self._left = Rows.empty(key_dtype, t_dtype)  # pending left rows, in (key, order) order
        self._left_code = np.empty(0, dtype=np.int64)
        self._right = Rows.empty(key_dtype, t_dtype)  # kept right rows, in (key, t, order) order
        self._right_code = np.empty(0, dtype=np.int64)
        self._finished = False

    def push(self, left: Rows, right: Rows) -> AsofOutput:
        """One micro-batch: rows of each side in any order (the engine orders each side by
        `order`). Returns the left rows certain now, with their matches, and the late rows."""
        self._check_open()
        self._check_times(left, right)
        keys, (remap, left_code, right_code) = factorize_keys(self._keys, left.key, right.key)
        marks = {
            side: self._marks[side].recoded(remap, len(keys), rows.t.dtype)
            for side, rows in (("left", left), ("right", right))
        }
        late_left, marks["left"] = marks["left"].arrive(
            left_code, left.t, left.order, self.disorder, "left"
        )
        late_right, marks["right"] = marks["right"].arrive(
            right_code, right.t, right.order, self.disorder, "right"
        )
        self._keys, self._marks = keys, marks  # nothing raises from here on
        self._left_code, self._right_code = remap[self._left_code], remap[self._right_code]
        self._add_left(left.take(~late_left), left_code[~late_left])
        self._add_right(right.take(~late_right), right_code[~late_right])
        emitted = self._emit(final=False)
        self._prune()
        return AsofOutput(
            *emitted, late_left=left.take(late_left), late_right=right.take(late_right)
        )

    def flush(self) -> AsofOutput:
        """The stream is finished: every pending left row is emitted with its match among all
        right rows kept (as if w_R were +inf). The stream takes no push after this."""
        self._check_open()
        emitted = self._emit(final=True)
        self._finished = True
        self._right, self._right_code = self._right.empty_like(), self._right_code[:0]
        return AsofOutput(*emitted, self._left.empty_like(), self._right.empty_like())

    @property
    def pending_left(self) -> int:
        """Left rows waiting for a certain match."""
        return len(self._left)

    @property
    def kept_right(self) -> int:
        """Right rows kept for matches still to come."""
        return len(self._right)

    def to_state(self) -> dict[str, np.ndarray]:
        """Everything needed to resume, as named numpy arrays (payload columns keep their dtypes,
        object included). The arrays are shared with the stream, which never changes them."""
        state = {
            "format": np.array([_FORMAT], dtype=np.int64),
            "finished": np.array([self._finished]),
            "keys": self._keys,
        }
        for side, marks in self._marks.items():
            state[f"{side}.max_t"] = marks.max_t
            state[f"{side}.seen"] = marks.seen
            state[f"{side}.last_order"] = marks.last_order
        state.update(self._left.to_arrays("pending_left"))
        state.update(self._right.to_arrays("kept_right"))
        return state

    @classmethod
    def from_state(
        cls, rule: AsofRule, disorder: float | int, state: Mapping[str, np.ndarray]
    ) -> AsofStream:
        """The stream that `to_state` saved, continuing where it stopped."""
        try:
            if int(state["format"][0]) != _FORMAT:
                raise ValueError(f"unknown as-of state format {int(state['format'][0])}")
            stream = cls(rule, disorder)
            stream._finished = bool(state["finished"][0])
            stream._keys = np.asarray(state["keys"])
            stream._marks = {
                side: SideMarks(
                    np.asarray(state[f"{side}.max_t"]),
                    np.asarray(state[f"{side}.seen"], dtype=bool),
                    np.asarray(state[f"{side}.last_order"], dtype=np.int64),
                )
                for side in ("left", "right")
            }
        except KeyError as error:
            raise ValueError(f"the state lacks the array {error.args[0]!r}") from None
        stream._left = Rows.from_arrays(state, "pending_left")
        stream._right = Rows.from_arrays(state, "kept_right")
        stream._left_code = stream._codes_of(stream._left.key)
        stream._right_code = stream._codes_of(stream._right.key)
        return stream

    # ---- steps ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished:
            raise ValueError("the as-of stream is finished (flush was called); start a new one")

    def _check_times(self, left: Rows, right: Rows) -> None:
        """All times, pushed and kept, are integers or all are floats."""
        known = [m.max_t for m in self._marks.values() if m.seen.any()]
        times = [t for t in (left.t, right.t, *known) if len(t)]
        for t in times[1:]:
            check_times(times[0], t)

    def _codes_of(self, keys: np.ndarray) -> np.ndarray:
        """Codes of keys that are all in the key table."""
        table, (_, codes) = factorize_keys(self._keys, keys)
        if len(table) != len(self._keys):
            raise ValueError("the state holds rows of a key that is not in its key table")
        return codes

    def _add_left(self, rows: Rows, code: np.ndarray) -> None:
        """Accepted left rows join the pending ones, kept in (key, order) order."""
        both = Rows.concat([self._left, rows])
        code = np.concatenate([self._left_code, code])
        perm = np.lexsort((both.order, code))
        self._left, self._left_code = both.take(perm), code[perm]

    def _add_right(self, rows: Rows, code: np.ndarray) -> None:
        """Accepted right rows join the kept ones, kept in (key, t, order) order."""
        both = Rows.concat([self._right, rows])
        code = np.concatenate([self._right_code, code])
        perm = np.lexsort((both.order, both.t, code))
        self._right, self._right_code = both.take(perm), code[perm]

    def _emit(self, final: bool) -> tuple[Rows, Rows, np.ndarray]:
        """The pending left rows certain now (all if `final`), their matches and whether matched;
        they leave the pending rows."""
        left, right = self._left, self._right
        found = find_candidates(
            self._left_code,
            left.t,
            self._right_code,
            right.t,
            exact=self.rule.allow_exact_matches,
        )
        match = choose_match(found, left.t, right.t, self.rule)
        ready = np.ones(len(left), dtype=bool) if final else self._certain(found)
        waiting = ~ready
        self._left, self._left_code = left.take(waiting), self._left_code[waiting]
        return left.take(ready), right.take_or_fill(match[ready]), match[ready] >= 0

    def _certain(self, found: AsofCandidates) -> np.ndarray:
        """Which pending left rows have a match that no later right row can change."""
        rule, lt, right_t = self.rule, self._left.t, self._right.t
        seen, w = self._marks["right"].watermark(self._left_code, self.disorder)
        backward = seen & ((w > lt) if rule.allow_exact_matches else (w >= lt))
        if rule.direction == "backward":
            return backward
        first_t = gather(right_t, found.forward)
        forward = (found.forward >= 0) & (first_t <= w)  # released: nothing can come before it
        if rule.allow_exact_matches:  # at l.t: a later row at l.t comes after it
            forward |= (found.forward >= 0) & (first_t == lt)
        if rule.tolerance is not None:
            forward |= seen & (w - lt > rule.tolerance)
        if rule.direction == "forward":
            return forward
        near = (found.backward >= 0) & (lt - gather(right_t, found.backward) <= w - lt)
        return backward & (forward | near)

    def _prune(self) -> None:
        """Drop the right rows no pending or future left row can match (module docstring)."""
        code, t = self._right_code, self._right.t
        if len(code) == 0:
            return
        bounded, bound = self._left_bound()
        released = t <= self._marks["right"].watermark(code, self.disorder)[1]
        drop = bounded[code] & (t < bound[code]) & released  # a prefix of each key's rows
        if self.rule.direction != "forward":  # keep the last row below the bound
            drop &= np.concatenate([drop[1:] & (code[1:] == code[:-1]), [False]])
        keep = ~drop
        self._right, self._right_code = self._right.take(keep), code[keep]

    def _left_bound(self) -> tuple[np.ndarray, np.ndarray]:
        """Per key code: whether m(k) is finite, and m(k) = min(w_L(k), smallest pending left t)."""
        seen, w = self._marks["left"].watermark(np.arange(len(self._keys)), self.disorder)
        code, t = self._left_code, self._left.t
        pending = np.zeros(len(self._keys), dtype=bool)
        smallest = np.zeros(len(self._keys), dtype=np.result_type(t.dtype, w.dtype))
        if len(code):
            starts = np.flatnonzero(np.concatenate([[True], code[1:] != code[:-1]]))
            pending[code[starts]] = True
            smallest[code[starts]] = np.minimum.reduceat(t, starts)
        bound = np.where(seen & pending, np.minimum(w, smallest), np.where(seen, w, smallest))
        return seen | pending, bound
