"""The stateful processor of `complement_join` on a stream, in a module that imports little.

At each query's start Spark's driver runs a Python process of its own that unpickles the
processor only to call `init` (the state variables' schemas). This module, and what the
processor holds (the specs and the bucket join's settings as plain values, not the
`BucketJoin`), import no pandas, pyarrow or compiled engine: loading them there would
lengthen that start. What a call does is `_stream_bucket.joined_bucket`, imported on the first
call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from statestream.spark.stored_engines import MAP_STATE

if TYPE_CHECKING:
    import pandas as pd

    from statestream.join import JoinSpec, SpecTemplate


class StreamBucketJoin(StatefulProcessor):
    """transformWithStateInPandas processor: one bucket's micro-batch joined, engines in a MapState.

    `join_settings`: the fields of the bucket join (`_bucket_join.BucketJoin`) but its specs,
    which each call expands from `specs` with the quantities it has.
    """

    def __init__(
        self, specs: Sequence[JoinSpec | SpecTemplate], join_settings: dict[str, Any]
    ) -> None:
        self.specs = list(specs)
        self.join_settings = dict(join_settings)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.things = handle.getMapState(*MAP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        from statestream.spark._stream_bucket import joined_bucket

        yield joined_bucket(rows, self.things, self.specs, self.join_settings)

    def close(self) -> None:
        pass
