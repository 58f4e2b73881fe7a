"""statestream on Spark: the complement and as-of joins, batch or streaming, and the patches.

- `asof_join(left, right, on=…, by=…, direction=…)`: every left row with its as-of match in
  `right`, as `pandas.merge_asof`, on two batch DataFrames, two streams, or a stream and a
  static side (`asof_join`); `flush_asof(…)`: the final flush of a stopped streaming one
  (`asof_flush`);
- `complement_join(df, specs, …)`: the pairs of a DataFrame of records, batch (`batch_join`) or
  streaming (`stream_join`);
- `flush_stream(df, specs, checkpoint, …)`: the final flush of a stopped streaming join, the
  pairs still pending in its checkpoint (`stream_flush`);
- `write_exactly_once(pairs, topic, …)`: a streaming DataFrame to Kafka, exactly once
  (`statestream.exactly_once`, re-exported here);
- `observations(wide_df, …)`: wide machine rows as records (`narrow`);
- `statestream.spark.patches`: what statestream changes in Spark itself.

Nothing here imports pyspark when imported: the worker daemon
(`statestream.spark.patches.python_daemon`) runs before pyspark may be imported, so the
functions are loaded when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from statestream.errors import EnvironmentProblem

if TYPE_CHECKING:
    from statestream.exactly_once.write import write_exactly_once
    from statestream.spark.asof import asof_join
    from statestream.spark.asof_flush import flush_asof
    from statestream.spark.batch_join import complement_join
    from statestream.spark.narrow import observations
    from statestream.spark.stream_flush import flush_stream

__all__ = [
    "asof_join",
    "complement_join",
    "flush_asof",
    "flush_stream",
    "observations",
    "write_exactly_once",
]

_HOMES = {
    "asof_join": "statestream.spark.asof",
    "flush_asof": "statestream.spark.asof_flush",
    "complement_join": "statestream.spark.batch_join",
    "flush_stream": "statestream.spark.stream_flush",
    "observations": "statestream.spark.narrow",
    "write_exactly_once": "statestream.exactly_once.write",
}


_NEED_THE_PIPELINE = {"write_exactly_once"}  # it uses the pipeline's settings and Kafka client


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(_HOMES[name])
    except ModuleNotFoundError as missing:
        library = (missing.name or "").partition(".")[0]
        if name not in _NEED_THE_PIPELINE or library == "statestream":
            raise
        raise EnvironmentProblem(
            f"statestream.spark.{name} needs the pipeline extra ({library} is not installed): "
            "pip install 'statestream[pipeline]'"
        ) from missing
    return getattr(module, name)
