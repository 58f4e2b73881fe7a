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
