"""A stateful call's Kafka rows put back in Kafka order."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from statestream.jobs.kafka_rows import kafka_ordered

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
