"""transformWithStateInPandas input, grouped a batch at a time instead of a row at a time.

Spark sends a stateful processor's input to the Python worker as Arrow batches sorted by grouping
key. PySpark 4.1's `TransformWithStateInPandasSerializer.load_stream` turns each batch into a
pandas frame, walks it with `itertuples`, regroups the rows with `itertools.groupby` and builds a
new frame from the row tuples: on the join's large batches that was a large part of the
Python workers' time. `grouped_frames` gives the same frames from runs of equal keys found with
numpy and slices of the converted batch, and `install` puts it in the serializer's place; the
worker daemon (`statestream.spark.patches.python_daemon`) installs it before it forks the
workers.

The processor receives what the row-at-a-time path gives, but for binary columns: for each key,
frames of at most `spark.sql.execution.arrow.maxRecordsPerBatch` rows (and `maxBytesPerBatch`,
when set) that continue across Arrow batches, with the keys and column types of the row-at-a-time
path, which builds each frame from Python values: whole numbers int64, floats float64, and an
object column typed by the values in that frame (booleans without a null are `bool`).

A binary column that is not a grouping key (a Kafka value, say) stays in Arrow: a pandas column
of `pd.ArrowDtype(pa.binary())` on the batch's own buffers, no Python `bytes` per row. A
processor reads it as Arrow (`jobs.kafka_rows.arrow_column`, a compiled decoder reads the values
in place) or as Python objects (`jobs.kafka_rows.python_objects`, `None` for a null).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

NAME = "grouped_rows"
WRITTEN_FOR = "4.1."  # the row-at-a-time load_stream this replaces, checked in the tests
_UNLIMITED_BYTES = 2**31 - 1  # Spark's default maxBytesPerBatch: no byte limit


def applies() -> str | None:
    """None when this PySpark is the one whose row-at-a-time path this replaces, else why not."""
    from statestream.spark.patches._checks import unsupported

    reason = unsupported(WRITTEN_FOR)
    if reason is None and _target() is None:
        return "pyspark has no TransformWithStateInPandasSerializer"
    return reason


def install() -> bool:
    """Replace the serializer's `load_stream` with `grouped_load_stream`; False if not this PySpark.

    Only the PySpark version whose row-at-a-time path the tests compare against is changed.
    """
    target = _target()
    if target is None or applies() is not None:
        return False
    target.load_stream = grouped_load_stream  # type: ignore[attr-defined]  # the patch itself
    return True


def _target() -> type | None:
    from pyspark.sql.pandas import serializers

    return getattr(serializers, "TransformWithStateInPandasSerializer", None)


def grouped_load_stream(self, stream) -> Iterator[tuple[Any, Any, Any]]:
    """`TransformWithStateInPandasSerializer.load_stream`, its frames made by `grouped_frames`."""
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode

    batches = ArrowStreamSerializer.load_stream(self, stream)
    for key, frames in itertools.groupby(grouped_frames(self, batches), key=lambda x: x[0]):
        yield (TransformWithStateInPandasFuncMode.PROCESS_DATA, key, frames)
    yield (TransformWithStateInPandasFuncMode.PROCESS_TIMER, None, None)
    yield (TransformWithStateInPandasFuncMode.COMPLETE, None, None)


def grouped_frames(serializer, batches: Iterable) -> Iterator[tuple[tuple, Any]]:
    """(key, frame) for Arrow `batches` sorted by key: each key's rows in frames of bounded size.

    `serializer` gives the conversion to pandas (`arrow_to_pandas`), the key columns
    (`key_offsets`) and the limits, and keeps the running average row size as PySpark does.
    """
    import pandas as pd

    pending: list = []  # slices of the current key not yet given out
    pending_rows = 0
    group: tuple | None = None  # the current key, as its first row gave it
    for batch in batches:
        limit = _rows_per_frame(serializer, batch)
        frame = _to_pandas(serializer, batch)
        for key, start, stop in _runs(frame, serializer.key_offsets):
            if group is None or key != group:
                if group is not None and pending:
                    yield group, _frame(pd, pending)
                pending, pending_rows, group = [], 0, key
            while start < stop:
                take = min(stop - start, max(limit - pending_rows, 1))
                pending.append(frame.iloc[start : start + take])
                pending_rows += take
                start += take
                if pending_rows >= limit:
                    yield group, _frame(pd, pending)
                    pending, pending_rows = [], 0
    if group is not None and pending:
        yield group, _frame(pd, pending)


def _rows_per_frame(serializer, batch) -> int:
    """The rows a frame holds at most while `batch` is read (PySpark's count and byte limits)."""
    limit = serializer.arrow_max_records_per_batch
    if serializer.arrow_max_bytes_per_batch == _UNLIMITED_BYTES or batch.num_rows == 0:
        return limit
    serializer.total_bytes += sum(
        buf.size for column in batch.columns for buf in column.buffers() if buf is not None
    )
    serializer.total_rows += batch.num_rows
    serializer.average_arrow_row_size = serializer.total_bytes / serializer.total_rows
    by_bytes = int(
        np.ceil(serializer.arrow_max_bytes_per_batch / serializer.average_arrow_row_size)
    )
    return max(1, min(limit, by_bytes))


def _to_pandas(serializer, batch):
    """The batch as one frame, converted column by column as PySpark does, named as it names them.

    The row-at-a-time path names a frame's columns after its row tuples' fields, so a name that
    is no Python identifier becomes `_<position>` there; the same names are used here.
    """
    import pandas as pd
    import pyarrow as pa

    keys = set(serializer.key_offsets)
    table = pa.Table.from_batches([batch])
    columns = [
        _arrow_backed(pd, column, name)
        if i not in keys and pa.types.is_binary(column.type)
        else serializer.arrow_to_pandas(column, i)
        for i, (name, column) in enumerate(zip(table.column_names, table.columns, strict=True))
    ]
    frame = pd.concat(columns, axis=1)
    fields = collections.namedtuple("Pandas", [str(c) for c in frame.columns], rename=True)._fields
    frame.columns = list(fields)
    return frame.astype(
        {
            name: np.int64 if dtype.kind in "iu" else np.float64
            for name, dtype in frame.dtypes.items()
            if (dtype.kind in "iu" and dtype != np.uint64) or dtype.kind == "f"
        }
    )


def _arrow_backed(pd, column, name: str):
    """A binary column as a pandas column on its Arrow buffers (no copy, no object per row)."""
    return pd.Series(pd.arrays.ArrowExtensionArray(column), name=name, copy=False)


def _runs(frame, key_offsets: list[int]) -> Iterator[tuple[tuple, int, int]]:
    """(key, start, stop) of each run of rows with equal keys, keys as Python values.

    Rows are compared as the row-at-a-time path compares their key tuples: NaN equals nothing,
    None equals None.
    """
    count = len(frame)
    if count == 0:
        return
    change = np.zeros(count, dtype=bool)
    change[0] = True
    for offset in key_offsets:
        values = frame.iloc[:, offset].to_numpy()
        change[1:] |= ~np.asarray(values[1:] == values[:-1], dtype=bool)
    starts = np.flatnonzero(change)
    stops = np.append(starts[1:], count)
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        key = tuple(_python_value(frame.iat[start, offset]) for offset in key_offsets)
        yield key, start, stop


def _python_value(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _frame(pd, slices: list):
    """One frame of a key's slices; object columns typed by their values, as from row tuples.

    No column is copied but those whose type changes: a new frame on the same columns gets a
    fresh index (`reset_index` and `infer_objects` each copied every column, a cost that grows
    with the frame). A slice's columns are the converted batch's, which no one else reads.
    """
    frame = slices[0].copy(deep=False) if len(slices) == 1 else pd.concat(slices)
    frame.index = pd.RangeIndex(len(frame))
    return frame.infer_objects(copy=False)
