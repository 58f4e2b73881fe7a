"""Spark jobs: the session factory every job uses, and the jobs themselves.

The names below are imported when first used (PEP 562): a stateful processor's module is
imported by Spark's driver-side Python process on a query's first batch, and with it this
package, which should not bring pyspark.sql's session and the settings along.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statestream.jobs.demo_counts import DemoCountsResult, run_demo_counts
    from statestream.jobs.session import connector_jars, spark_options, spark_session

_HOMES = {
    "DemoCountsResult": "statestream.jobs.demo_counts",
    "run_demo_counts": "statestream.jobs.demo_counts",
    "connector_jars": "statestream.jobs.session",
    "spark_options": "statestream.jobs.session",
    "spark_session": "statestream.jobs.session",
}

__all__ = [
    "DemoCountsResult",
    "connector_jars",
    "run_demo_counts",
    "spark_options",
    "spark_session",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
