"""A stateful call's Kafka rows: put back in Kafka order, their binary columns read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from statestream.codecs.kafka_rows import arrow_column, kafka_order, kafka_ordered, python_objects

positions = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**12)), min_size=1, unique=True)


@given(positions, st.integers(1, 4))
def test_rows_come_out_as_a_sort_by_partition_and_offset_gives_them(rows, frames: int) -> None:
    frame = pd.DataFrame(
        {
            "key": [f"k{i}" for i in range(len(rows))],
            "value": [str(i).encode() for i in range(len(rows))],
            "partition": [p for p, _ in rows],
            "offset": [o for _, o in rows],
        }
    )
    parts = [frame.iloc[k::frames] for k in range(frames)]
    expected = pd.concat(parts, ignore_index=True).sort_values(
        ["partition", "offset"], kind="stable", ignore_index=True
    )
    pd.testing.assert_frame_equal(kafka_ordered(parts), expected)


@given(
    st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), unique=True),
)
def test_the_order_is_lexsorts_for_any_partition_and_offset(rows) -> None:
    partition = np.array([p for p, _ in rows], dtype=np.int32)
    offset = np.array([o for _, o in rows], dtype=np.int64)
    expected = np.lexsort((offset, partition))
    assert kafka_order(partition, offset).tolist() == expected.tolist()


def test_a_binary_column_is_read_as_arrow_or_objects_either_way() -> None:
    values = [b"a", None, b"\xff"]
    arrow = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.binary())))
    objects = pd.Series(values, dtype=object)
    for column in (arrow, objects):
        assert arrow_column(column).to_pylist() == values
        assert python_objects(column).tolist() == values
    assert arrow_column(pd.Series(["R1.q", "\ud800"])).to_pylist() == [b"R1.q", b"\xed\xa0\x80"]
