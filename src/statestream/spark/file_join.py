"""The batch join of files with Spark: JSON lines or Parquet in, Parquet or JSON lines out.

What `statestream join --spark` runs. A JSON-lines input is taken in file order, as the local
join takes it (one file: Spark's row ids follow it); a Parquet input in the order of a column
(`order`) or in time order. Wide rows (`Thing, Timestamp, q1, …`) become records first.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import InputError
from statestream.join import JoinSpec
from statestream.spark.batch_join import complement_join
from statestream.spark.narrow import observations

ARRIVAL = "_arrival"  # a JSON-lines record's place in its file


@dataclass
class FileJoinSummary:
    """What a Spark file join wrote: pairs, and rejected rows by reason (late, missing …)."""

    pairs: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    rejected_path: Path | None = None
    seconds: float = 0.0


def is_parquet(path: Path) -> bool:
    """A Parquet file or folder: by its name, or a folder holding Parquet parts."""
    return path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet")))


def read_records(
    spark: SparkSession, path: Path, order: str | None
) -> tuple[DataFrame, str | None]:
    """The records of `path` and the column of their arrival order (None: time order)."""
    if not path.exists():
        raise InputError(f"cannot read {path}: no such file or folder")
    if is_parquet(path):
        df = spark.read.parquet(str(path))
    else:
        df = spark.read.json(str(path)).withColumn(ARRIVAL, F.monotonically_increasing_id())
        order = order or ARRIVAL
    if "quantity" not in df.columns and "Thing" in df.columns:
        df = observations(df, keep=[order] if order else [])
    return df, order


def join_files(
    spark: SparkSession,
    source: Path,
    specs: Sequence[JoinSpec],
    *,
    output: Path | None,
    rejected_output: Path,
    out: IO[str],
    flush: bool = True,
    order: str | None = None,
) -> FileJoinSummary:
    """Join `source` and write the pairs to `output` (Parquet for a .parquet name, else JSON
    lines, a Spark folder of parts) or, without one, as JSON lines to `out`; the rejected rows
    go to `rejected_output` (in the output's format), which is removed when it is empty."""
    started = time.perf_counter()
    records, order = read_records(spark, source, order)
    pairs, rejected = complement_join(records, specs, order=order, flush=flush, rejected=True)
    summary = FileJoinSummary()
    parquet = output is not None and output.suffix == ".parquet"
    if output is None:
        for row in pairs.toLocalIterator():
            out.write(json.dumps(row.asDict(recursive=True)) + "\n")
            summary.pairs += 1
    else:
        _write(pairs, output, parquet)
        summary.pairs = _read(spark, output, parquet).count()
    if ARRIVAL in rejected.columns:
        rejected = rejected.drop(ARRIVAL)
    _write(rejected, rejected_output, parquet)
    summary.rejected = _reasons(_read(spark, rejected_output, parquet))
    if summary.rejected:
        summary.rejected_path = rejected_output
    else:
        shutil.rmtree(rejected_output, ignore_errors=True)
    summary.seconds = time.perf_counter() - started
    return summary


def _reasons(rejected: DataFrame) -> dict[str, int]:
    """How many rejected rows per kind of reason (its text up to a colon)."""
    if "reason" not in rejected.columns:  # an empty JSON folder has no columns
        return {}
    kinds = F.substring_index(F.col("reason"), ":", 1).alias("kind")
    return {row["kind"]: row["count"] for row in rejected.groupBy(kinds).count().collect()}


def _write(df: DataFrame, path: Path, parquet: bool) -> None:
    writer = df.write.mode("overwrite")
    if parquet:
        writer.parquet(str(path))
    else:
        writer.json(str(path))


def _read(spark: SparkSession, path: Path, parquet: bool) -> DataFrame:
    return spark.read.parquet(str(path)) if parquet else spark.read.json(str(path))
