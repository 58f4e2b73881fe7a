"""statestream on Spark: the batch complement join of a DataFrame, and the patches.

- `complement_join(df, specs, …)`: the pairs of a DataFrame of records (`batch_join`);
- `observations(wide_df, …)`: wide machine rows as records (`narrow`);
- `statestream.spark.patches`: what statestream changes in Spark itself.

Nothing here imports pyspark when imported: the worker daemon
(`statestream.spark.patches.python_daemon`) runs before pyspark may be imported, so the two
functions are loaded when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statestream.spark.batch_join import complement_join
    from statestream.spark.narrow import observations

__all__ = ["complement_join", "observations"]


def __getattr__(name: str) -> Any:
    if name == "complement_join":
        from statestream.spark.batch_join import complement_join

        return complement_join
    if name == "observations":
        from statestream.spark.narrow import observations

        return observations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
