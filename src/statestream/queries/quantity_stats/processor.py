"""The stateful processor of the quantity statistics: machine records → window results.

Spark groups the input by a *bucket* of things, so one call handles many things; the windows of
each series (thing, quantity) are kept as bytes in a MapState. What a call does is
`queries.quantity_stats.rows`, imported on the first call: Spark's driver imports this module
in a Python process of its own only to run `init`, which stays quick without pandas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from statestream.queries.quantity_stats import QuantityTopics

if TYPE_CHECKING:
    import pandas as pd

    from statestream.queries.quantity_stats.spec import QuantitySpec

# name, key and value schemas, as types (a DDL string costs a JVM round trip in every task)
MAP_STATE = (
    "windows",
    StructType([StructField("thing", StringType()), StructField("quantity", StringType())]),
    StructType([StructField("state", BinaryType())]),
)


class QuantityStatisticsProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: the windows of the series of one bucket."""

    def __init__(self, spec: QuantitySpec, topics: QuantityTopics) -> None:
        self.spec = spec
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.windows = handle.getMapState(*MAP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.queries.quantity_stats.rows import quantity_rows

        yield quantity_rows(rows, self.windows, self.spec, self.topics)

    def close(self) -> None:
        pass
