"""The complement join of a Parquet file with PySpark, in batch.

Writes the bundled sample (wide machine rows) as narrow records to Parquet, joins every thing's
actSpeed_C11 and vaTorque_C11 into vaPower_C11 pairs, writes those to Parquet and prints how many:

    python examples/batch_parquet.py [FOLDER]

FOLDER (default: a new temporary folder) receives observations.parquet and pairs.parquet.
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import resources
from pathlib import Path

from pyspark.sql import SparkSession

from statestream.join import SpecTemplate
from statestream.spark import complement_join, observations


def main(folder: Path) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need statestream too
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("statestream-batch-parquet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    sample = resources.files("statestream.data").joinpath("machine_events.jsonl")
    records = folder / "observations.parquet"
    observations(spark.read.json(str(sample))).write.mode("overwrite").parquet(str(records))

    # no arrival order in a Parquet file: each series is taken in time order
    pairs = complement_join(spark.read.parquet(str(records)), [SpecTemplate()])
    pairs.write.mode("overwrite").parquet(str(folder / "pairs.parquet"))
    count = spark.read.parquet(str(folder / "pairs.parquet")).count()
    print(f"{count} pairs written to {folder / 'pairs.parquet'}")
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="statestream-")))
