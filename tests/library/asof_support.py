"""What the as-of join's Spark tests share: random sides, `pandas.merge_asof`'s answer, and
streams of parquet files read one file per micro-batch."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession


def sides(seed: int, rows: int = 240, things: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two unsorted sides with ties in time inside each side and across them."""
    rng = np.random.default_rng(seed)

    def side(prefix: str, n: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "k": rng.integers(0, things, n).astype(np.int64),
                "t": rng.integers(0, n // 2, n).astype(np.int64),
                f"{prefix}id": np.arange(n, dtype=np.int64),
                "v": rng.normal(size=n),
            }
        )

    return side("l", rows), side("r", rows)


def expected(
    left: pd.DataFrame, right: pd.DataFrame, direction: str, tolerance, exact: bool, by="k"
) -> dict[int, int | None]:
    """left id → right id of its match (None: no match), by pandas (right in its given order
    among equal times)."""
    ordered = right.assign(_pos=np.arange(len(right))).sort_values(["t", "_pos"], kind="stable")
    merged = pd.merge_asof(
        left.sort_values("t", kind="stable"),
        ordered[["t", "k", "rid"]],
        on="t",
        by=by,
        direction=direction,
        tolerance=tolerance,
        allow_exact_matches=exact,
    )
    return {
        int(a): (None if pd.isna(b) else int(b))
        for a, b in zip(merged["lid"], merged["rid"], strict=True)
    }


def found(rows: list) -> dict[int, int | None]:
    result: dict[int, int | None] = {}
    for row in rows:
        assert row.lid not in result, f"left row {row.lid} came out twice"
        result[row.lid] = row.rid
    return result


def write_chunks(frame: pd.DataFrame, folder: Path, cuts: np.ndarray) -> None:
    """`frame` cut at `cuts` into one Parquet file per part, modified a second apart: Spark's
    file source takes new files in the order of their modification times, and files written
    within one clock tick would come in any order."""
    folder.mkdir(parents=True)
    for index, part in enumerate(np.split(frame, cuts)):
        path = folder / f"part-{index:04d}.parquet"
        part.to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def stream_of(spark: SparkSession, folder: Path, like: DataFrame) -> DataFrame:
    return spark.readStream.schema(like.schema).option("maxFilesPerTrigger", 1).parquet(str(folder))


def run_to_end(
    joined: DataFrame, checkpoint: Path, name: str, spark: SparkSession, timeout_s: int = 300
) -> list:
    """The rows `joined` writes to a memory table `name` in one availableNow run from
    `checkpoint`; the run must end within `timeout_s` and without an error."""
    query = (
        joined.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(timeout_s), f"the stream did not end within {timeout_s} s"
        if query.exception() is not None:
            raise AssertionError(str(query.exception()))
    finally:
        query.stop()
    return spark.table(name).collect()


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """`settings` on the session inside the block, the values before back after it."""
    before = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
