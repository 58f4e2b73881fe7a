"""The stateful processor of the bunching pattern: the positions of one line → its alerts.

Spark groups the decoded positions (`jobs.vehicle_decoding`) by line, `route/direction`; values
that are no usable position come as the group with the empty line and become dead letters
(stage `bunching`). A line's state (`geo.bunching.LineBunching`) is kept as bytes in a
ValueState. Rows arrive unordered: they are put back in Kafka offset order, so each vehicle's
positions (one key, one partition) are taken in the order they arrived, the same in every
attempt of a batch.

What a call does is `queries.bunching.rows`. This module imports little: on a query's first batch
Spark's driver starts a Python process of its own that imports it only to run `init` (the state
variables' schemas), and importing pandas there would lengthen that start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from statestream.queries.bunching import BunchingTopics

if TYPE_CHECKING:
    import pandas as pd

    from statestream.geo.bunching import BunchingSpec

# name and schema: the DDL "state binary" as a type, for a DDL string costs a round trip to the
# JVM's SQL parser in every task
VALUE_STATE = ("line", StructType([StructField("state", BinaryType())]))


class VehicleBunchingProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: the bunching alerts of one line."""

    def __init__(self, spec: BunchingSpec, topics: BunchingTopics) -> None:
        self.spec = spec
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.line = handle.getValueState(*VALUE_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.queries.bunching.rows import line_rows

        yield line_rows(key[0], rows, self.line, self.spec, self.topics)

    def close(self) -> None:
        pass
