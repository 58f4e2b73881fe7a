"""The stateful processor of the streaming join (transformWithStateInPandas).

Spark groups the Kafka rows by a *bucket* of things (a hash of the key's thing modulo a setting),
so one call joins many things at once; the engine states of a thing (one per join) are kept as
one bytes value in a MapState keyed by thing: each state store call is a request to the JVM,
so one per thing and not one per join (sent in windows, `spark.patches.map_state_calls`). What
a call does is `queries.join.rows`.

This module imports little: on a query's first batch Spark's driver starts a Python process of
its own that imports it only to run `init` (the state variables' schemas), and importing
pandas, pyarrow and the decoders there would lengthen that start. `join_rows` is imported on
the first call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from statestream.queries.join import OutputTopics
from statestream.spark.stored_engines import MAP_STATE

if TYPE_CHECKING:
    import pandas as pd

    from statestream.join import SpecTemplate


class ComplementJoinProcessor(StatefulProcessor):
    """transformWithStateInPandas processor: joins the things of one bucket, state in a MapState."""

    def __init__(self, templates: Sequence[SpecTemplate], topics: OutputTopics) -> None:
        self.templates = list(templates)
        self.topics = topics

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.things = handle.getMapState(*MAP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.queries.join.rows import join_rows

        yield join_rows(rows, self.things, self.templates, self.topics)

    def close(self) -> None:
        pass
