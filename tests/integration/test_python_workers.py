"""Spark's Python workers, as statestream's session starts them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle


def _worker_path(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    import sys

    for _ in frames:
        yield pd.DataFrame({"path": [json.dumps(sys.path)]})


def test_python_workers_import_without_pysparks_archives(spark: SparkSession) -> None:
    rows = spark.range(1).mapInPandas(_worker_path, "path string").collect()
    path = json.loads(rows[0].path)
    assert any("site-packages" in entry for entry in path)
    assert not [entry for entry in path if entry.endswith((".zip", ".jar"))]


def _stateful_input_path(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

    for _ in frames:
        yield pd.DataFrame(
            {"module": [TransformWithStateInPandasSerializer.load_stream.__module__]}
        )


def test_python_workers_group_stateful_input_a_batch_at_a_time(spark: SparkSession) -> None:
    rows = spark.range(1).mapInPandas(_stateful_input_path, "module string").collect()
    assert rows[0].module == "statestream.spark.patches.grouped_rows"


def _map_state_calls_installed(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    from statestream.spark.patches import map_state_calls

    for _ in frames:
        yield pd.DataFrame({"installed": [map_state_calls._installed]})


def test_python_workers_send_map_state_calls_in_windows(spark: SparkSession) -> None:
    rows = spark.range(1).mapInPandas(_map_state_calls_installed, "installed boolean").collect()
    assert rows[0].installed is True


def _collected_modules(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    import gc

    import pyarrow

    collected = {id(item) for item in gc.get_objects()}  # the frozen ones are left out
    for _ in frames:
        yield pd.DataFrame(
            {
                "frozen": [gc.get_freeze_count()],
                "pandas_collected": [id(vars(pd)) in collected],
                "pyarrow_collected": [id(vars(pyarrow)) in collected],
            }
        )


def test_python_workers_full_collections_leave_the_preloaded_modules_alone(
    spark: SparkSession,
) -> None:
    schema = "frozen long, pandas_collected boolean, pyarrow_collected boolean"
    row = spark.range(1).mapInPandas(_collected_modules, schema).collect()[0]
    assert row.frozen > 10_000
    assert not row.pandas_collected
    assert not row.pyarrow_collected


class _InitWitness(StatefulProcessor):
    """Writes, from each process that runs its `init`, that process's module and pyspark."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def init(self, handle: StatefulProcessorHandle) -> None:
        import os
        import sys
        from pathlib import Path

        import pyspark

        seen = {"module": sys.argv[0], "pyspark": pyspark.__file__}
        Path(self.folder, f"{os.getpid()}.json").write_text(json.dumps(seen))
        self.seen = handle.getValueState("seen", "n long")

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        yield pd.DataFrame({"k": [key[0]]})

    def close(self) -> None:
        pass


def test_a_queries_driver_side_python_imports_without_pysparks_archives(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The process the driver starts at a transformWithState query's first batch (to run the
    processor's `init`) gets pyspark from site-packages: the python_launcher patch."""
    source, seen = tmp_path / "source", tmp_path / "seen"
    source.mkdir()
    seen.mkdir()
    (source / "rows.json").write_text('{"k": "a"}\n{"k": "b"}\n')
    query = (
        spark.readStream.schema("k string")
        .json(str(source))
        .groupBy("k")
        .transformWithStateInPandas(
            _InitWitness(str(seen)),
            outputStructType="k string",
            outputMode="Append",
            timeMode="None",
        )
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    processes = [json.loads(p.read_text()) for p in seen.glob("*.json")]
    driver_side = [
        p for p in processes if p["module"].endswith("transform_with_state_driver_worker.py")
    ]
    assert driver_side, processes
    assert all(".zip" not in p["pyspark"] for p in processes), processes
