"""The `spark` fixture where no conftest gives one (the library matrix): a plain local session,
made as a PySpark user makes one — no statestream settings, no services."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The active session if there is one, else a new local one, stopped at the end."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers: this venv's Python
    session = (
        SparkSession.builder.master("local[2]")
        .appName("statestream-library-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # the streaming join keeps its engines in RocksDB (docs/how-to/pyspark.md)
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        # quicker to start: the tests' jobs are short (the main suite's JVMs do the same); C1
        # alone reserves a 48 MB code cache, which the whole library run's generated classes
        # filled ("Out of space in CodeCache", the JVM ended), so it gets more
        .config(
            "spark.driver.extraJavaOptions",
            "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m",
        )
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
