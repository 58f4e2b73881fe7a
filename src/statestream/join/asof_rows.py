"""Rows of one side of the as-of stream, and what one step of it gives back.

`Rows` and `AsofOutput` are the public names of `statestream.join.asof_stream`; they live here to
keep that module small.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from statestream.join.asof import concat_arrays, gather

_COLUMN = "column."  # the prefix of payload columns in `to_arrays`


@dataclass
class Rows:
    """Rows of one side: key, t, order (arrival order, int64, increasing within a side over the
    stream), and payload columns carried through.

    t is kept as int64 or float64 and order as int64; every array is 1-D and of one length.

    >>> rows = Rows(np.array(["a", "b"]), np.array([1, 2]), np.array([10, 11]), {"v": [0.5, 1.5]})
    >>> len(rows), rows.take(np.array([1])).columns["v"]
    (2, array([1.5]))
    """

    key: np.ndarray
    t: np.ndarray
    order: np.ndarray  # int64
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.key = np.asarray(self.key)
        self.t = _times(np.asarray(self.t))
        order = np.asarray(self.order)
        if order.dtype.kind not in "iu" and len(order):
            raise ValueError(f"order must hold integers; got {order.dtype}")
        self.order = order.astype(np.int64, copy=False)
        self.columns = {name: np.asarray(values) for name, values in self.columns.items()}
        arrays = {"key": self.key, "t": self.t, "order": self.order, **self.columns}
        shapes = {name: values.shape for name, values in arrays.items()}
        if any(len(shape) != 1 for shape in shapes.values()):
            raise ValueError(f"every array of Rows must be 1-D; got shapes {shapes}")
        if len({shape[0] for shape in shapes.values()}) > 1:
            raise ValueError(f"every array of Rows must have the same length; got shapes {shapes}")

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index: np.ndarray) -> Rows:
        """The rows at `index` (positions or a boolean mask), in that order."""
        return Rows(
            self.key[index],
            self.t[index],
            self.order[index],
            {name: values[index] for name, values in self.columns.items()},
        )

    def take_or_fill(self, index: np.ndarray) -> Rows:
        """The rows at `index`; where index is -1, a placeholder (zero, empty string, None)."""
        return Rows(
            _gather(self.key, index),
            _gather(self.t, index),
            _gather(self.order, index),
            {name: _gather(values, index) for name, values in self.columns.items()},
        )

    def empty_like(self) -> Rows:
        """No rows, with these rows' dtypes and columns."""
        return self.take(np.empty(0, dtype=np.int64))

    @classmethod
    def empty(
        cls,
        key_dtype: npt.DTypeLike = np.int64,
        t_dtype: npt.DTypeLike = np.int64,
        columns: Mapping[str, npt.DTypeLike] | None = None,
    ) -> Rows:
        """No rows, of the given dtypes."""
        return cls(
            np.empty(0, dtype=key_dtype),
            np.empty(0, dtype=t_dtype),
            np.empty(0, dtype=np.int64),
            {name: np.empty(0, dtype=dtype) for name, dtype in (columns or {}).items()},
        )

    @classmethod
    def concat(cls, parts: Sequence[Rows]) -> Rows:
        """The rows of `parts`, one after the other. Parts without rows do not count, so an empty
        placeholder does not impose its dtypes or columns; the rows that do count must have the
        same columns."""
        if not parts:
            raise ValueError("Rows.concat needs at least one part")
        full = [part for part in parts if len(part)]
        if not full:  # the latest part that knows its columns
            return next((part for part in reversed(parts) if part.columns), parts[-1])
        names = set(full[0].columns)
        if any(set(part.columns) != names for part in full):
            found = sorted({tuple(sorted(part.columns)) for part in full})
            raise ValueError(f"rows to concatenate have different columns: {found}")
        return cls(
            concat_arrays([part.key for part in full]),
            concat_arrays([part.t for part in full]),
            concat_arrays([part.order for part in full]),
            {name: concat_arrays([part.columns[name] for part in full]) for name in names},
        )

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The rows as named arrays: `{prefix}.key`, `.t`, `.order`, `.column.<name>`."""
        arrays = {f"{prefix}.key": self.key, f"{prefix}.t": self.t, f"{prefix}.order": self.order}
        arrays.update({f"{prefix}.{_COLUMN}{name}": v for name, v in self.columns.items()})
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> Rows:
        """The rows that `to_arrays(prefix)` gave."""
        head = f"{prefix}.{_COLUMN}"
        columns = {name[len(head) :]: v for name, v in arrays.items() if name.startswith(head)}
        try:
            return cls(
                arrays[f"{prefix}.key"], arrays[f"{prefix}.t"], arrays[f"{prefix}.order"], columns
            )
        except KeyError as error:
            raise ValueError(f"the state lacks the array {error.args[0]!r}") from None


@dataclass
class AsofOutput:
    """What one push (or the flush) of an `AsofStream` gives: the left rows emitted now, each with
    its match, and the rows refused as late."""

    left: Rows  # the left rows emitted now (each accepted left row exactly once over the stream)
    right: Rows  # aligned with `left`: the matched right row; placeholders where not `matched`
    matched: np.ndarray  # bool, aligned with left
    late_left: Rows  # left rows refused as late (not joined)
    late_right: Rows  # right rows refused as late


def _times(t: np.ndarray) -> np.ndarray:
    """t as int64 or float64."""
    if t.dtype.kind in "iu":
        return t.astype(np.int64, copy=False)
    if t.dtype.kind == "f":
        return t.astype(np.float64, copy=False)
    if len(t) == 0:
        return t.astype(np.int64)
    raise ValueError(f"t must be an integer or float array; got {t.dtype}")


def _gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """values[index], with a placeholder (None in object arrays, else zero) where index is -1."""
    out = gather(values, index)
    if values.dtype == object:
        out[index < 0] = None
    return out
