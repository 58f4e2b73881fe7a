"""The as-of join, batch: each left row meets the right row of its key nearest in time.

`asof_indices` computes exactly what `pandas.merge_asof(left, right, on="t", by="key", ...)` does,
with numpy alone and without the sorted-input requirement: left rows keep their given order, and
the right rows are taken in (t, `right_order`) order, so among right rows with equal t a backward
search takes the last in `right_order` and a forward search the first.

The rules pandas follows, which this module reproduces (checked against pandas 2.3 by the tests):

- backward: the last right row with t <= l.t (t < l.t if `allow_exact_matches` is False);
- forward: the first right row with t >= l.t (t > l.t if `allow_exact_matches` is False);
- tolerance: a candidate farther than `tolerance` (l.t − b.t, resp. f.t − l.t, computed in the dtype
  of t) is dropped; the search does not go on to a farther row;
- nearest: the backward and the forward candidate are found as above, each with the exactness rule
  and the tolerance applied on its own; when both remain, the backward one wins if
  l.t − b.t <= f.t − l.t (**a tie goes backward**), else the forward one. With
  `allow_exact_matches=False` a right row at exactly l.t is never taken, even by nearest: the
  choice is between the last row strictly before and the first strictly after.

Times are int64 or float64, the same dtype on both sides; NaN times are not allowed and not
checked: the caller rejects them before (pandas refuses them too). Keys are any 1-D arrays that
`np.unique` can sort (int64, strings, object arrays of strings); equal values are the same group.

>>> rule = AsofRule("backward")
>>> asof_indices(np.array([1, 1, 2]), np.array([5, 0, 5]), np.array([1, 1]), np.array([3, 4]), rule)
array([ 1, -1, -1])
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Literal, NamedTuple, get_args

import numpy as np

Direction = Literal["backward", "forward", "nearest"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)


@dataclass(frozen=True)
class AsofRule:
    """Which right row an as-of join takes for a left row (pandas.merge_asof's three options).

    `tolerance` is in the units of t (None: any distance); a candidate farther away is no match.
    (pandas wants an integer tolerance for integer t; here a float one is compared as it is.)
    """

    direction: Direction = "backward"
    tolerance: float | int | None = None
    allow_exact_matches: bool = True

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"direction must be one of {', '.join(DIRECTIONS)}; got {self.direction!r}"
            )
        tolerance = self.tolerance
        if tolerance is not None:
            if isinstance(tolerance, bool) or not isinstance(tolerance, Real):
                raise ValueError(f"tolerance must be a number or None; got {tolerance!r}")
            if not tolerance >= 0:  # NaN too
                raise ValueError(f"tolerance must be >= 0 (in the units of t); got {tolerance!r}")


class AsofCandidates(NamedTuple):
    """Per left row, positions into the sorted right arrays (-1: none), tolerance not applied."""

    backward: np.ndarray  # the last right row with t <= l.t (< when exact matches are not allowed)
    forward: np.ndarray  # the first right row with t >= l.t (> when exact matches are not allowed)


def asof_indices(
    left_key: np.ndarray,
    left_t: np.ndarray,
    right_key: np.ndarray,
    right_t: np.ndarray,
    rule: AsofRule,
    *,
    right_order: np.ndarray | None = None,
) -> np.ndarray:
    """For each left row (in the order given), the index (into the right arrays as given) of its
    match, or -1: pandas.merge_asof on right sorted by (t, right_order), stably."""
    left_key, left_t = _side("left", left_key, left_t)
    right_key, right_t = _side("right", right_key, right_t)
    check_times(left_t, right_t)
    if right_order is None:
        right_order = np.arange(len(right_t), dtype=np.int64)
    else:
        right_order = _order("right_order", right_order, len(right_t))
    _, (left_code, right_code) = factorize_keys(left_key, right_key)
    perm = np.lexsort((right_order, right_t, right_code))
    sorted_t = right_t[perm]
    found = find_candidates(
        left_code, left_t, right_code[perm], sorted_t, exact=rule.allow_exact_matches
    )
    match = choose_match(found, left_t, sorted_t, rule)
    return np.where(match >= 0, gather(perm, match), -1).astype(np.int64)


def factorize_keys(*keys: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct key values (sorted) and, for each key array, its codes (int64) into them:
    equal keys get equal codes on every side."""
    lengths = [len(k) for k in keys]
    try:
        values, inverse = _unique(concat_arrays(list(keys)))
    except TypeError as error:  # e.g. ints on one side, strings on the other
        raise ValueError(f"keys cannot be compared with each other: {error}") from error
    return values, np.split(inverse, np.cumsum(lengths)[:-1])


def _unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True). Strings are first numbered with a dict and only the
    distinct ones sorted: sorting every row's string costs several times more (object arrays:
    ten times), and there are far fewer keys than rows."""
    if keys.dtype.kind not in "OSU":
        values, inverse = np.unique(keys, return_inverse=True)
        return values, inverse.reshape(-1).astype(np.int64)
    items = keys.tolist()
    code_of = {key: code for code, key in enumerate(dict.fromkeys(items))}
    first = np.fromiter(map(code_of.__getitem__, items), np.int64, len(items))
    distinct = np.empty(len(code_of), dtype=keys.dtype)
    distinct[:] = list(code_of)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order], rank[first]


def find_candidates(
    left_code: np.ndarray,
    left_t: np.ndarray,
    right_code: np.ndarray,
    right_t: np.ndarray,
    *,
    exact: bool = True,
) -> AsofCandidates:
    """The backward and forward candidate of each left row among right rows sorted by (code, t).

    One searchsorted on a composite (key code, rank of t): the rank is taken over the times of
    both sides, so it orders them exactly as the times do, for floats as well as ints.
    """
    n_left, n_right = len(left_t), len(right_t)
    none = np.full(n_left, -1, dtype=np.int64)
    if n_left == 0 or n_right == 0:
        return AsofCandidates(none, none.copy())
    _, rank = np.unique(np.concatenate([left_t, right_t]), return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    width = int(rank.max()) + 1
    left_pos = left_code.astype(np.int64) * width + rank[:n_left]
    right_pos = right_code.astype(np.int64) * width + rank[n_left:]
    backward = np.searchsorted(right_pos, left_pos, side="right" if exact else "left") - 1
    forward = np.searchsorted(right_pos, left_pos, side="left" if exact else "right")
    backward_ok = backward >= 0
    backward_ok[backward_ok] = right_code[backward[backward_ok]] == left_code[backward_ok]
    forward_ok = forward < n_right
    forward_ok[forward_ok] = right_code[forward[forward_ok]] == left_code[forward_ok]
    return AsofCandidates(
        np.where(backward_ok, backward, -1).astype(np.int64),
        np.where(forward_ok, forward, -1).astype(np.int64),
    )


def choose_match(
    found: AsofCandidates, left_t: np.ndarray, right_t: np.ndarray, rule: AsofRule
) -> np.ndarray:
    """The match of each left row under `rule` (positions into `right_t`, -1: none): the tolerance
    applied to each candidate, then, for nearest, the nearer one (a tie goes backward)."""
    backward = found.backward
    forward = found.forward
    back_gap = left_t - gather(right_t, backward)
    forward_gap = gather(right_t, forward) - left_t
    if rule.tolerance is not None:
        backward = np.where(back_gap > rule.tolerance, -1, backward)
        forward = np.where(forward_gap > rule.tolerance, -1, forward)
    if rule.direction == "backward":
        return backward
    if rule.direction == "forward":
        return forward
    take_back = (backward >= 0) & ((forward < 0) | (back_gap <= forward_gap))
    return np.where(take_back, backward, forward)


def gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """values[index] where index >= 0; a zero of values' dtype where index is -1."""
    if len(values) == 0:
        return np.zeros(len(index), dtype=values.dtype)
    out = values[np.maximum(index, 0)]
    out[index < 0] = np.zeros(1, dtype=values.dtype)[0]
    return out


def concat_arrays(arrays: list[np.ndarray]) -> np.ndarray:
    """np.concatenate that leaves out empty arrays, so that an empty placeholder of another dtype
    (an empty state, say) does not change the dtype of the rest."""
    full = [a for a in arrays if len(a)]
    if not full:
        return arrays[0] if arrays else np.empty(0)
    return full[0] if len(full) == 1 else np.concatenate(full)


def check_times(left_t: np.ndarray, right_t: np.ndarray) -> None:
    """Both sides' times are integers, or both floats (pandas refuses to mix them)."""
    kinds = {"left": left_t.dtype.kind, "right": right_t.dtype.kind}
    for side, kind in kinds.items():
        if kind not in "iuf":
            raise ValueError(f"{side} t must be an integer or float array; got {kind!r} dtype")
    if (kinds["left"] == "f") != (kinds["right"] == "f"):
        raise ValueError(
            f"left and right t must both be integers or both floats; got {left_t.dtype} and "
            f"{right_t.dtype}"
        )


def _side(name: str, key: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One side's key and t as 1-D arrays of one length; t as int64 or float64."""
    key, t = np.asarray(key), np.asarray(t)
    if key.ndim != 1 or t.ndim != 1:
        raise ValueError(f"{name}_key and {name}_t must be 1-D arrays")
    if len(key) != len(t):
        raise ValueError(
            f"{name}_key and {name}_t must have the same length; got {len(key)} and {len(t)}"
        )
    if t.dtype.kind in "iu":
        t = t.astype(np.int64, copy=False)
    elif t.dtype.kind == "f":
        t = t.astype(np.float64, copy=False)
    return key, t


def _order(name: str, order: np.ndarray, length: int) -> np.ndarray:
    """An order array as int64, checked: 1-D, integers, `length` long."""
    order = np.asarray(order)
    if order.ndim != 1 or len(order) != length:
        raise ValueError(f"{name} must be a 1-D array of {length} rows; got shape {order.shape}")
    if order.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers; got {order.dtype}")
    return order.astype(np.int64, copy=False)
