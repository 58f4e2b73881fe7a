"""`statestream.spark.asof_join` on Spark equals `pandas.merge_asof`: batch, two streams (with the
final flush), and a stream with a static right side; late rows are returned, not lost."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import ConfigError, SchemaError
from statestream.spark import asof_join, flush_asof
from tests.library.asof_support import (
    expected,
    found,
    run_to_end,
    session_conf,
    sides,
    stream_of,
    write_chunks,
)

RULES = [
    ("backward", None, True),
    ("backward", 3, False),
    ("forward", None, True),
    ("forward", 2, False),
    ("nearest", None, True),
    ("nearest", 4, False),
]


@pytest.mark.parametrize(("direction", "tolerance", "exact"), RULES)
def test_batch_equals_merge_asof(
    spark: SparkSession, direction: str, tolerance, exact: bool
) -> None:
    left, right = sides(seed=7)
    joined = asof_join(
        spark.createDataFrame(left),
        spark.createDataFrame(right),
        on="t",
        by="k",
        direction=direction,  # type: ignore[arg-type]
        tolerance=tolerance,
        allow_exact_matches=exact,
        buckets=3,
    )
    assert "FlatMapCoGroupsInArrow" in plan_of(joined)  # buckets given: a shuffle
    assert joined.columns == ["k", "t", "lid", "v_x", "rid", "v_y"]
    assert found(joined.select("lid", "rid").collect()) == expected(
        left, right, direction, tolerance, exact
    )


@pytest.mark.parametrize(("direction", "tolerance", "exact"), RULES)
def test_a_small_batch_joins_in_one_task_without_a_shuffle(
    spark: SparkSession, tmp_path: Path, direction: str, tolerance, exact: bool
) -> None:
    left, right = sides(seed=11)
    joined = asof_join(
        parquet_of(spark, left, tmp_path / "left"),
        parquet_of(spark, right, tmp_path / "right"),
        on="t",
        by="k",
        direction=direction,  # type: ignore[arg-type]
        tolerance=tolerance,
        allow_exact_matches=exact,
    )
    plan = plan_of(joined)
    assert "MapInArrow" in plan and "Coalesce 1" in plan and "Exchange" not in plan
    assert joined.rdd.getNumPartitions() == 1
    assert joined.columns == ["k", "t", "lid", "v_x", "rid", "v_y"]
    assert found(joined.select("lid", "rid").collect()) == expected(
        left, right, direction, tolerance, exact
    )


@pytest.mark.parametrize("threshold", ["1", "-1"])
def test_sides_over_the_broadcast_size_are_shuffled(
    spark: SparkSession, tmp_path: Path, threshold: str
) -> None:
    left, right = sides(seed=5)
    with session_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": threshold}):
        joined = asof_join(
            parquet_of(spark, left, tmp_path / "left"),
            parquet_of(spark, right, tmp_path / "right"),
            on="t",
            by="k",
        )
        assert "FlatMapCoGroupsInArrow" in plan_of(joined)
        assert found(joined.collect()) == expected(left, right, "backward", None, True)


def test_the_buckets_spread_over_the_shuffle_partitions(spark: SparkSession) -> None:
    """Two buckets in two partitions: each has its own (a plain hash put both in one, and one
    task did all the matching)."""
    left, right = sides(seed=9, things=40)
    settings = {"spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"}
    with session_conf(spark, settings):
        joined = asof_join(
            spark.createDataFrame(left), spark.createDataFrame(right), on="t", by="k", buckets=2
        )
        per_partition = joined.groupBy(F.spark_partition_id().alias("p")).count().collect()
        assert sorted(row.p for row in per_partition) == [0, 1]
        assert found(joined.collect()) == expected(left, right, "backward", None, True)


@pytest.mark.parametrize("empty", ["left", "right", "both"])
def test_a_small_batch_with_an_empty_side(spark: SparkSession, tmp_path: Path, empty: str) -> None:
    left, right = sides(seed=3, rows=40)
    frames = {
        "left": parquet_of(spark, left, tmp_path / "left"),
        "right": parquet_of(spark, right, tmp_path / "right"),
    }
    for side in ("left", "right"):
        if empty in (side, "both"):
            frames[side] = frames[side].where(F.lit(False))
    joined = asof_join(frames["left"], frames["right"], on="t", by="k")
    assert "MapInArrow" in plan_of(joined)
    lids = [] if empty in ("left", "both") else left["lid"]
    assert found(joined.collect()) == {int(i): None for i in lids}


def parquet_of(spark: SparkSession, frame: pd.DataFrame, path: Path) -> DataFrame:
    """`frame` as a Parquet file read back: a DataFrame whose size Spark estimates (one made
    from pandas without Arrow conversion has none, and counts as large)."""
    path.mkdir()
    frame.to_parquet(path / "part-0.parquet", index=False)
    return spark.read.parquet(str(path))


def plan_of(joined: DataFrame) -> str:
    """The physical plan Spark would run (classic session)."""
    return str(joined._jdf.queryExecution().executedPlan().toString())


@pytest.fixture(params=["UTC", "Etc/UTC", "Europe/Helsinki"])
def time_zone(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    """The session's time zone for the test (Spark hands timestamps to Python zoned by it, and a
    user's session has the machine's), set back after."""
    with session_conf(spark, {"spark.sql.session.timeZone": request.param}):
        yield request.param


@pytest.mark.parametrize("buckets", [None, 2])  # one task (small), or a shuffle
def test_timestamps_several_keys_and_a_timedelta_tolerance(
    spark: SparkSession, time_zone: str, buckets: int | None
) -> None:
    start = pd.Timestamp("2026-01-01T00:00:00")
    trades = pd.DataFrame(
        {
            "t": start + pd.to_timedelta([0, 1.5, 3, 3, 10], unit="s"),
            "k": ["a", "a", "a", "b", "a"],
            "venue": [1, 1, 2, 1, 1],
            "lid": [0, 1, 2, 3, 4],
        }
    )
    quotes = pd.DataFrame(
        {
            "t": start + pd.to_timedelta([0.000001, 1, 2.9, 2.5, 9], unit="s"),
            "k": ["a", "a", "a", "b", "a"],
            "venue": [1, 1, 2, 1, 2],
            "rid": [10, 11, 12, 13, 14],
        }
    )
    with session_conf(spark, {"spark.sql.execution.arrow.pyspark.enabled": "true"}):
        frames = spark.createDataFrame(trades), spark.createDataFrame(quotes)  # sized: local
    joined = asof_join(
        *frames, on="t", by=["k", "venue"], tolerance=dt.timedelta(seconds=1), buckets=buckets
    )
    assert ("MapInArrow" if buckets is None else "FlatMapCoGroupsInArrow") in plan_of(joined)
    reference = pd.merge_asof(
        trades,
        quotes.sort_values("t"),
        on="t",
        by=["k", "venue"],
        tolerance=pd.Timedelta(seconds=1),
    )
    assert found(joined.collect()) == dict(
        zip(
            reference["lid"],
            [None if pd.isna(r) else int(r) for r in reference["rid"]],
            strict=True,
        )
    )
    assert found(joined.collect()) == {0: None, 1: 11, 2: 12, 3: 13, 4: None}


@pytest.mark.parametrize(("direction", "tolerance", "exact"), [RULES[0], RULES[3], RULES[5]])
def test_two_streams_and_their_flush_equal_the_batch_join(
    spark: SparkSession, tmp_path: Path, direction: str, tolerance, exact: bool
) -> None:
    """Each side in time order (an offset), split into files at random places; the stream
    reads one file of each side per micro-batch, so the sides interleave differently."""
    left, right = sides(seed=11, rows=160)
    rng = np.random.default_rng(3)
    streams = {}
    for name, frame in (("left", left), ("right", right)):
        ordered = frame.sort_values(["t", f"{name[0]}id"], kind="stable").reset_index(drop=True)
        ordered["offset"] = np.arange(len(ordered), dtype=np.int64)
        cuts = np.sort(rng.choice(np.arange(1, len(ordered)), size=5, replace=False))
        write_chunks(ordered, tmp_path / name, cuts)
        streams[name] = stream_of(spark, tmp_path / name, spark.createDataFrame(ordered))
    options = dict(on="t", by="k", direction=direction, tolerance=tolerance, order="offset")
    options["allow_exact_matches"] = exact
    joined = asof_join(streams["left"], streams["right"], **options)
    name = f"asof_{direction}_{int(exact)}"
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "checkpoint", name, spark)
    rest = flush_asof(streams["left"], streams["right"], tmp_path / "checkpoint", **options)
    right_in_offset_order = right.sort_values(["t", "rid"], kind="stable")
    reference = expected(left, right_in_offset_order, direction, tolerance, exact)
    assert found(emitted + rest.select("lid", "rid").collect()) == reference
    assert len(emitted) < len(reference)  # some rows waited for the flush


def test_two_streams_without_an_order_column_number_each_micro_batch_in_time_order(
    spark: SparkSession, tmp_path: Path
) -> None:
    """No ties in time, each side's files in time order: numbered by the processor, nothing is
    late, and the stream with its flush is the batch join."""
    rng = np.random.default_rng(9)
    frames = {
        "left": pd.DataFrame({"t": np.arange(0, 200, 2), "lid": np.arange(100)}),
        "right": pd.DataFrame({"t": np.arange(1, 200, 2), "rid": np.arange(100)}),
    }
    streams = {}
    for name, frame in frames.items():
        frame["k"] = rng.integers(0, 3, len(frame))
        write_chunks(frame, tmp_path / name, np.array([30, 70]))
        streams[name] = stream_of(spark, tmp_path / name, spark.createDataFrame(frame))
    joined = asof_join(streams["left"], streams["right"], on="t", by="k", direction="forward")
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "cp", "asof_no_order", spark)
    rest = flush_asof(streams["left"], streams["right"], tmp_path / "cp", on="t", by="k",
                      direction="forward")  # fmt: skip
    reference = expected(frames["left"], frames["right"], "forward", None, True)
    assert found(emitted + rest.select("lid", "rid").collect()) == reference


def test_an_order_column_that_goes_back_across_micro_batches_is_taken_per_micro_batch(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Offsets of another partition, or a file read late: the second micro-batch's order values
    are below the first's; the stream goes on, its batches in the order they came."""
    left = pd.DataFrame({"t": [1, 5, 9], "k": [1, 1, 1], "lid": [0, 1, 2], "offset": [10, 11, 0]})
    right = pd.DataFrame(
        {"t": [0, 4, 8, 12], "k": [1] * 4, "rid": range(4), "offset": [7, 8, 1, 2]}
    )
    streams = []
    for name, frame in (("left", left), ("right", right)):
        write_chunks(frame, tmp_path / name, np.array([2]))
        streams.append(stream_of(spark, tmp_path / name, spark.createDataFrame(frame)))
    joined = asof_join(*streams, on="t", by="k", order="offset")
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "cp", "asof_order_back", spark)
    assert found(emitted) == {0: 0, 1: 1, 2: 2}


def test_a_stream_with_a_static_right_side_matches_at_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    left, right = sides(seed=5, rows=120)
    write_chunks(left, tmp_path / "left", np.array([40, 80]))
    stream = stream_of(spark, tmp_path / "left", spark.createDataFrame(left))
    joined = asof_join(stream, spark.createDataFrame(right), on="t", by="k", direction="nearest")
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "cp", "asof_static", spark)
    assert found(emitted) == expected(left, right, "nearest", None, True)


def test_a_late_right_row_is_returned_not_joined(spark: SparkSession, tmp_path: Path) -> None:
    left = pd.DataFrame({"t": [5, 11], "k": [1, 1], "lid": [0, 1], "offset": [0, 1]})
    right = pd.DataFrame(
        {"t": [4, 10, 3, 11, 13], "k": [1] * 5, "rid": [0, 1, 2, 3, 4], "offset": range(5)}
    )
    write_chunks(left, tmp_path / "left", np.array([], dtype=int))
    write_chunks(right, tmp_path / "right", np.array([], dtype=int))
    streams = [
        stream_of(spark, tmp_path / side, spark.createDataFrame(frame))
        for side, frame in (("left", left), ("right", right))
    ]
    joined, refused = asof_join(*streams, on="t", by="k", order="offset", disorder=1, late=True)
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "cp", "asof_late_pairs", spark)
    late = run_to_end(refused, tmp_path / "cp2", "asof_late_rows", spark)
    assert found(emitted) == {0: 0, 1: 3}  # right@3 came after right@10 (watermark 9): late
    assert [(r.side, r.reason) for r in late] == [("right", "late")]
    assert '"rid":2' in late[0].row


def test_wrong_calls_say_what_is_wrong(spark: SparkSession, tmp_path: Path) -> None:
    left, right = sides(seed=1, rows=10)
    static_left, static_right = spark.createDataFrame(left), spark.createDataFrame(right)
    with pytest.raises(SchemaError, match="'when' is not in the left DataFrame"):
        asof_join(static_left, static_right, on="when")
    with pytest.raises(ValueError, match="direction"):
        asof_join(static_left, static_right, on="t", direction="sideways")  # type: ignore[arg-type]
    write_chunks(right, tmp_path / "right", np.array([], dtype=int))
    with pytest.raises(ConfigError, match="static left side with a streaming right side"):
        asof_join(static_left, stream_of(spark, tmp_path / "right", static_right), on="t")


@pytest.mark.parametrize("time_zone", ["Europe/Helsinki"], indirect=True)
@pytest.mark.parametrize("right_streams", [False, True], ids=["static-right", "two-streams"])
def test_streams_of_timestamps_in_a_session_of_another_time_zone(
    spark: SparkSession, tmp_path: Path, time_zone: str, right_streams: bool
) -> None:
    start = pd.Timestamp("2026-03-29T00:30:00", tz="UTC")  # Helsinki's clocks go forward at 1

    def stamped(frame: pd.DataFrame) -> pd.DataFrame:
        """In time order, numbered in it (`offset`), `t` as minutes after `start` (µs, as Spark
        reads Parquet timestamps)."""
        frame = frame.sort_values("t", kind="stable")
        frame = frame.assign(offset=np.arange(len(frame), dtype=np.int64))
        times = start + pd.to_timedelta(frame["t"], unit="min")
        return frame.assign(t=times.astype("datetime64[us, UTC]"))

    left, right = (stamped(side) for side in sides(seed=9, rows=90))
    write_chunks(left, tmp_path / "left", np.array([30, 60]))
    left_stream = stream_of(spark, tmp_path / "left", spark.createDataFrame(left))
    right_side = spark.createDataFrame(right)
    options: dict = {"on": "t", "by": "k"}
    if right_streams:
        write_chunks(right, tmp_path / "right", np.array([30, 60]))
        right_side = stream_of(spark, tmp_path / "right", right_side)
        options["order"] = "offset"
    joined = asof_join(left_stream, right_side, **options)
    name = f"asof_zoned_{'streams' if right_streams else 'static'}"
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "cp", name, spark)
    if right_streams:
        rest = flush_asof(left_stream, right_side, tmp_path / "cp", **options)
        emitted += rest.select("lid", "rid").collect()
    assert found(emitted) == expected(left, right, "backward", None, True)
