"""The stateful processor of the operation statistics: power records → window results.

Spark groups the input by a *bucket* of things, so one call handles many things; the window
state of each power series (thing, component) is kept as bytes in a MapState. What a call does
is `queries.stats.rows`.

This module imports little: on a query's first batch Spark's driver starts a Python process of
its own that imports it only to run `init` (the state variables' schemas), and importing
pandas and the decoders there would lengthen that start. `stats_rows` is imported on the first
call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from statestream.queries.stats import StatsTopics

if TYPE_CHECKING:
    import pandas as pd

    from statestream.stats import StatsSpec

# name, key and value schemas: the DDL "thing string, component string" and "state binary" as
# types, for a DDL string costs a round trip to the JVM's SQL parser in every task
MAP_STATE = (
    "windows",
    StructType([StructField("thing", StringType()), StructField("component", StringType())]),
    StructType([StructField("state", BinaryType())]),
)


class PowerStatisticsProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: the statistics of the power series of one bucket."""

    def __init__(self, spec: StatsSpec, power_quantity: str, topics: StatsTopics) -> None:
        from statestream.stats import component_pattern

        self.spec = spec
        self.component = component_pattern(power_quantity)  # vaPower_C11 → C11
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.windows = handle.getMapState(*MAP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.queries.stats.rows import stats_rows

        yield stats_rows(rows, self.windows, self.spec, self.component, self.topics)

    def close(self) -> None:
        pass
