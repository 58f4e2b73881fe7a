"""Spark's Python workers, as statestream's session starts them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import SparkSession


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
