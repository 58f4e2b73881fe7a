"""The stateful processor of the geo cells: positions of a bucket of cells → window results.

Spark groups the decoded positions (`queries.geo.input`) by a *bucket* of cells, so one call
handles many cells, vectorized (`statestream.geo.CellWindows`); each window of the bucket is one
entry of a MapState (window start → its cells' aggregates as bytes). Rows arrive unordered and
are put back in Kafka offset order first. The watermark is Spark's query watermark of the
micro-batch (`timerValues`), the same in every attempt of the batch; an event-time timer at each
window's end (and at its end + allowed lateness) calls the bucket again when the watermark passes
it, so a window that gets no more positions is still made final and then dropped.

What a call does is `queries.geo.rows`. This module imports little: on a query's first batch
Spark's driver starts a Python process of its own that imports it only to run `init` (the state
variables' schemas), and importing pandas there would lengthen that start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from statestream.queries.geo import GeoTopics

if TYPE_CHECKING:
    import pandas as pd

    from statestream.geo import GeoSpec

# name, key and value schemas: the DDL "start long" and "cells binary" as types, for a DDL
# string costs a round trip to the JVM's SQL parser in every task
MAP_STATE = (
    "windows",
    StructType([StructField("start", LongType())]),
    StructType([StructField("cells", BinaryType())]),
)


class CellWindowsProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: the cell windows of one bucket of cells."""

    def __init__(self, spec: GeoSpec, topics: GeoTopics) -> None:
        self.spec = spec
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.windows = handle.getMapState(*MAP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.queries.geo.rows import cell_rows

        yield cell_rows(self, rows, timerValues.getCurrentWatermarkInMs())

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        from statestream.queries.geo.rows import expired_rows

        yield expired_rows(self, timerValues.getCurrentWatermarkInMs())

    def close(self) -> None:
        pass
