"""The Kafka rows of one stateful call: put back in Kafka order, their binary columns read.

transformWithStateInPandas hands a processor the rows of a group in the order the shuffle read
them, in frames: each processor joins them and sorts them by (partition, offset) before it reads
a series in arrival order. A binary column (a Kafka key or value) arrives Arrow-backed
(`spark.patches.grouped_rows`) or, without that patch, as Python objects: `arrow_column` and
`python_objects` read it either way.

    >>> rows = [pd.DataFrame({"partition": [1, 0], "offset": [5, 9]}),
    ...         pd.DataFrame({"partition": [0], "offset": [3]})]
    >>> kafka_ordered(rows).values.tolist()
    [[0, 3], [0, 9], [1, 5]]
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa


def kafka_ordered(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The rows of `frames` as one frame sorted by (partition, offset), indexed 0 … n − 1.

    One numpy sort (`kafka_order`): pandas' `sort_values` on two columns first turns each into
    a categorical, which a large call pays for.
    """
    frame = pd.concat(list(frames), ignore_index=True)
    order = kafka_order(frame["partition"].to_numpy(), frame["offset"].to_numpy())
    if (order[1:] > order[:-1]).all():  # already in order (a small call, often)
        return frame
    return frame.take(order).reset_index(drop=True)


def kafka_order(partition: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The positions of rows in (partition, offset) order: one sort of a combined key when
    both fit (a few times faster than `np.lexsort` of the two on shuffled rows)."""
    if len(offset) and (
        offset.min() < 0
        or offset.max() >= 1 << 40
        or partition.min() < 0
        or partition.max() >= 1 << 23
    ):
        return np.lexsort((offset, partition))
    return np.argsort((partition.astype(np.int64) << 40) | offset.astype(np.int64))


def arrow_column(column: pd.Series) -> pa.ChunkedArray:
    """A column of Kafka keys or values as Arrow binary: an Arrow-backed column as it is (no
    copy), Python objects converted (bytes as they are, a str in UTF-8, None a null)."""
    if isinstance(column.dtype, pd.ArrowDtype):
        array = column.array.__arrow_array__()
        return array if array.type == pa.binary() else array.cast(pa.binary())
    values = [
        value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        for value in column.to_numpy(dtype=object)
    ]
    return pa.chunked_array([pa.array(values, type=pa.binary())])


def python_objects(column: pd.Series) -> np.ndarray:
    """A column's values as Python objects, a missing one as None (not pandas' NA)."""
    if isinstance(column.dtype, pd.ArrowDtype):
        return column.to_numpy(dtype=object, na_value=None)
    return column.to_numpy(dtype=object)
