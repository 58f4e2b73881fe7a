"""What `statestream status` reads of a query run: written by the listener in Spark's JVM
(`QueryProgressFiles`) and the lifecycle callbacks in Python, on the tests' real session."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings
from statestream.jobs.status import (
    FAILED,
    STOPPED,
    QueryStatus,
    progress_after,
    read_statuses,
    status_folder,
)


def _finished(settings: Settings, name: str, timeout_s: float = 20.0) -> QueryStatus:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:  # the listener hears of the end asynchronously
        runs = read_statuses(status_folder(settings), include_finished=True)
        done = [s for s in runs if s.name == name and s.state in (STOPPED, FAILED)]
        if done:
            return done[0]
        time.sleep(0.2)
    raise AssertionError(f"no finished status of {name}")


def _numbers(spark: SparkSession, folder: Path, rows: int) -> DataFrame:
    """A stream of the numbers below `rows` in three files, a file a batch, observed as `m`."""
    folder.mkdir()
    for part in range(3):
        lines = [f'{{"n": {i}}}' for i in range(part, rows, 3)]
        (folder / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    return (
        spark.readStream.schema("n long")
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
        .observe("m", F.count(F.lit(1)).alias("rows_in"), F.max("n").alias("max_n"))
    )


def test_a_runs_totals_add_its_batches(
    spark: SparkSession, settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    query = (
        _numbers(spark, tmp_path / "in", 30)
        .writeStream.queryName(unique_name)
        .format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    reports = progress_after(query, -1)
    assert [r["batchId"] for r in reports] == [0, 1, 2]
    assert progress_after(query, 1) == reports[2:]
    status = _finished(settings, unique_name)
    assert status.state == STOPPED and status.error is None
    assert status.batch == 2
    assert status.totals == {"input_rows": 30, "rows_in": 30}  # max_n is no counter
    assert status.metrics == reports[-1]["observedMetrics"]["m"]  # the last batch's: no sums


def test_a_failed_run_says_why(
    spark: SparkSession, settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    def fail(batch: DataFrame, batch_id: int) -> None:
        raise ValueError(f"batch {batch_id} refused by the test")

    query = (
        _numbers(spark, tmp_path / "in", 3)
        .writeStream.queryName(unique_name)
        .foreachBatch(fail)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(Exception, match="refused by the test"):
        query.awaitTermination(120)
    status = _finished(settings, unique_name)
    assert status.state == FAILED
    assert status.error is not None and "\n" not in status.error
