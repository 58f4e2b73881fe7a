"""The stateful processor of `asof_join` on two streams, in a module that imports little.

Spark's driver unpickles the processor at each query's start only to call `init`; what a call
does is `_asof_call.joined_micro_batch`, imported on the first call (no numpy engine or pandas
at that start).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

if TYPE_CHECKING:
    import pandas as pd

STATE = ("asof", "blob binary")  # one bucket's engine (`AsofStream.to_state`), pickled


class AsofProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: one bucket's micro-batch of both sides joined, the
    bucket's `AsofStream` kept in a ValueState. `setup` holds the rule and the disorder."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = dict(setup)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState(*STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.spark._asof_call import joined_micro_batch

        yield joined_micro_batch(rows, self.state, self.setup)

    def close(self) -> None:
        pass
