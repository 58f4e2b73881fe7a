"""The library's joins in a plain SparkSession: batch and streaming `complement_join`,
`flush_stream` and `observations`, checked against the engine run directly."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from statestream.join import JoinRouter, JoinSpec
from statestream.spark import complement_join, flush_stream, observations

SCHEMA = "thing string, quantity string, phenomenonTime long, result double, offset long"
BASE_MS = 1_700_000_000_000
SPEC = JoinSpec("L", "R", "out", function="product", disorder=2.0)
# two things, disorder within 2 s, ties, an irrelevant quantity, a duplicate, a late record
# and pairs still pending at the end: (thing, quantity, quarter seconds, value)
RECORDS = [
    ("m1", "L", 0, 1),
    ("m1", "L", 4, 2),
    ("m2", "R", 8, 1),
    ("m1", "R", 6, 3),
    ("m1", "R", 6, 1),
    ("m1", "L", 2, 0),
    ("m2", "L", 4, 2),
    ("m1", "X", 5, 1),
    ("m1", "L", 12, 3),
    ("m2", "R", 16, 2),
    ("m1", "R", 10, 2),
    ("m1", "R", 10, 2),
    ("m2", "L", 24, 0),
    ("m2", "R", 20, 1),
    ("m1", "L", 40, 1),
    ("m1", "R", 44, 2),
    ("m1", "L", 1, 5),
    ("m1", "R", 38, 0),
    ("m1", "L", 48, 3),
]
ROWS = [
    (thing, quantity, BASE_MS + 250 * quarters, float(value), offset)
    for offset, (thing, quantity, quarters, value) in enumerate(RECORDS)
]


def engine_pairs(rows: list[tuple], flush: bool) -> Counter:
    """What `JoinRouter` emits for `rows` in list order (their arrival order), as `collected`."""
    router = JoinRouter([SPEC])
    things, quantities, times, values = (np.asarray(c) for c in list(zip(*rows, strict=True))[:4])
    steps = [router.process(things.astype(object), quantities.astype(object), times, values)]
    if flush:
        steps.append(router.finish())
    found: Counter = Counter()
    for step in steps:
        for spec, pair_things, p in step.pairs_by_spec():
            for k in range(len(p)):
                left = (spec.left, float(p.left_t[k]), float(p.left_v[k]))
                right = (spec.right, float(p.right_t[k]), float(p.right_v[k]))
                found[(pair_things[k], spec.result, float(p.time[k]), float(p.result[k]))] += 1
                found[(pair_things[k], left, right)] += 1
    return found


def collected(pairs: DataFrame | list, to_ms: Callable[[Any], float] = float) -> Counter:
    """`complement_join`'s pair rows as `engine_pairs` counts them, times in epoch ms."""
    found: Counter = Counter()
    for r in pairs.collect() if isinstance(pairs, DataFrame) else pairs:
        left = (r.left.quantity, to_ms(r.left.phenomenonTime), r.left.result)
        right = (r.right.quantity, to_ms(r.right.phenomenonTime), r.right.result)
        found[(r.thing, r.quantity, to_ms(r.phenomenonTime), r.result)] += 1
        found[(r.thing, left, right)] += 1
    return found


def test_the_batch_join_is_the_engines(spark: SparkSession) -> None:
    df = spark.createDataFrame(ROWS, SCHEMA)
    for flush in (True, False):
        pairs = complement_join(df, [SPEC], order="offset", flush=flush, buckets=3)
        assert collected(pairs) == engine_pairs(ROWS, flush)
    _, rejected = complement_join(df, [SPEC], order="offset", rejected=True)
    assert sorted(row.reason.split(":")[0] for row in rejected.collect()) == ["duplicate", "late"]


def test_timestamps_give_the_pairs_of_epoch_ms(spark: SparkSession) -> None:
    stamped = [
        (thing, quantity, dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc), value, offset)
        for thing, quantity, ms, value, offset in ROWS
    ]
    schema = SCHEMA.replace("phenomenonTime long", "phenomenonTime timestamp")
    pairs = complement_join(spark.createDataFrame(stamped, schema), [SPEC], order="offset")
    # collected as naive local times; the quarter seconds and their means are exact floats
    assert collected(pairs, lambda moment: moment.timestamp() * 1000) == engine_pairs(ROWS, True)


def test_a_stream_and_its_flush_are_the_batch_join(spark: SparkSession, tmp_path: Path) -> None:
    batches = [ROWS[:7], ROWS[7:13], ROWS[13:]]
    stream = _file_stream(spark, batches, tmp_path / "in")
    found: list = []
    query = (
        complement_join(stream, [SPEC], order="offset", buckets=2)
        .writeStream.foreachBatch(lambda batch, _id: found.extend(batch.collect()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    assert query.exception() is None
    assert collected(found) == engine_pairs(ROWS, flush=False)
    flushed = flush_stream(stream, [SPEC], tmp_path / "checkpoint", order="offset")
    assert collected(found) + collected(flushed) == engine_pairs(ROWS, flush=True)


def _file_stream(spark: SparkSession, batches: list[list[tuple]], folder: Path) -> DataFrame:
    """A streaming DataFrame whose micro-batches are `batches`: one Parquet file each, read one
    per trigger in the order of their modification times."""
    folder.mkdir(parents=True)
    schema = spark.createDataFrame([], SCHEMA).schema
    types = [pa.string(), pa.string(), pa.int64(), pa.float64(), pa.int64()]
    for number, batch in enumerate(batches):
        columns = list(zip(*batch, strict=True))
        table = pa.table(
            {f.name: pa.array(c, t) for f, c, t in zip(schema.fields, columns, types, strict=True)}
        )
        path = folder / f"batch-{number}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_600_000_000 + number, 1_600_000_000 + number))
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))


def test_observations_are_the_wide_rows_narrow(spark: SparkSession) -> None:
    wide = spark.createDataFrame(
        [("m1", BASE_MS, 1.0, 2.0), ("m1", BASE_MS + 1000, None, 3.0)],
        "Thing string, Timestamp long, L double, R double",
    )
    narrow = sorted(tuple(row) for row in observations(wide).collect())
    assert narrow == [
        ("m1", "L", BASE_MS, 1.0),
        ("m1", "R", BASE_MS, 2.0),
        ("m1", "R", BASE_MS + 1000, 3.0),
    ]
