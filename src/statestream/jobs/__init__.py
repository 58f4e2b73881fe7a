"""Spark jobs: the session factory every job uses, and the jobs themselves."""

from statestream.jobs.demo_counts import DemoCountsResult, run_demo_counts
from statestream.jobs.session import connector_jars, spark_options, spark_session

__all__ = [
    "DemoCountsResult",
    "connector_jars",
    "run_demo_counts",
    "spark_options",
    "spark_session",
]
