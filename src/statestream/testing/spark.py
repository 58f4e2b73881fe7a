"""Testing a join spec with PySpark: observation DataFrames from plain lists, batch and streaming,
and an in-memory sink that runs a stream to its end and returns its rows.

    >>> from statestream.join import JoinSpec
    >>> from statestream.spark import complement_join
    >>> spec = JoinSpec("L", "R", "out", function="product")
    >>> rows = [("m1", "L", 0, 2.0, 0), ("m1", "R", 1000, 3.0, 1), ("m1", "L", 2000, 4.0, 2)]
    >>> frame = observation_frame(spark, rows)                                 # doctest: +SKIP
    >>> batch = complement_join(frame, [spec], order="offset")                # doctest: +SKIP
    >>> stream = observation_stream(spark, [rows[:1], rows[1:]], tmp_path)  # doctest: +SKIP
    >>> pairs = MemorySink(tmp_path / "checkpoint").run(
    ...     complement_join(stream, [spec], order="offset"))                  # doctest: +SKIP
    >>> sorted(p["result"] for p in pair_records(pairs))                      # doctest: +SKIP
    [6.0, 12.0]

A row is `(thing, quantity, time, value, offset)` under `OBSERVATIONS` (epoch ms, the offset an
arrival order) unless a schema is given; list order is the order Spark reads them in.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Row, SparkSession

OBSERVATIONS = "thing string, quantity string, phenomenonTime long, result double, offset long"


def observation_frame(
    spark: SparkSession, rows: Sequence[tuple], schema: str = OBSERVATIONS
) -> DataFrame:
    """A batch DataFrame of `rows` (tuples in `schema`'s column order)."""
    return spark.createDataFrame(list(rows), schema)


def observation_stream(
    spark: SparkSession,
    batches: Sequence[Sequence[tuple]],
    folder: Path,
    schema: str = OBSERVATIONS,
) -> DataFrame:
    """A streaming DataFrame whose micro-batches are `batches`, in order, one Parquet file each.

    The files are written to `folder` (new or empty) with increasing modification times and read
    one per trigger (`maxFilesPerTrigger`), so a query run with `trigger(availableNow=True)`
    (`MemorySink.run`) sees exactly these micro-batches, an empty batch included.
    """
    struct = spark.createDataFrame([], schema).schema
    arrow_schema = pa.schema(
        [(field.name, _arrow_type(field.dataType.simpleString())) for field in struct.fields]
    )
    folder.mkdir(parents=True, exist_ok=True)
    first = 1_600_000_000
    for number, batch in enumerate(batches):
        columns: list[Sequence[Any]] = (
            list(zip(*batch, strict=True)) if batch else [[] for _ in struct.fields]
        )
        table = pa.table(
            {f.name: pa.array(c, f.type) for f, c in zip(arrow_schema, columns, strict=True)}
        )
        path = folder / f"batch-{number:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (first + number, first + number))
    return spark.readStream.schema(struct).option("maxFilesPerTrigger", 1).parquet(str(folder))


_ARROW_TYPES = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "float": pa.float32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def _arrow_type(name: str) -> pa.DataType:
    if name not in _ARROW_TYPES:
        raise ValueError(f"observation_stream cannot write a {name} column; use {_ARROW_TYPES}")
    return _ARROW_TYPES[name]


class MemorySink:
    """Runs a streaming DataFrame to the end of its input and keeps its rows in memory.

    `run(df)` starts the query with `trigger(availableNow=True)` and checkpoint `checkpoint`,
    waits for it and returns the rows of this run (`batches` keeps them micro-batch by
    micro-batch). Running again with the same checkpoint continues where the last run stopped,
    as a restarted query does. The rows pass through the driver: for tests, not for volumes.
    """

    def __init__(self, checkpoint: Path) -> None:
        self.checkpoint = checkpoint
        self.batches: list[list[Row]] = []

    def run(self, df: DataFrame, timeout_s: float = 300.0) -> list[Row]:
        first = len(self.batches)
        query = (
            df.writeStream.foreachBatch(lambda batch, _id: self.batches.append(batch.collect()))
            .option("checkpointLocation", str(self.checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            # pyspark annotates the timeout as int, but takes float seconds (int(timeout * 1000))
            if not query.awaitTermination(timeout_s):  # type: ignore[arg-type]
                raise TimeoutError(f"the stream did not end within {timeout_s} s")
        finally:
            query.stop()
        return [row for batch in self.batches[first:] for row in batch]


def pair_records(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Pair rows (of `complement_join`) as the spec's output records: plain dicts."""
    return [row.asDict(recursive=True) for row in rows]
