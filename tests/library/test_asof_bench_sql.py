"""`bench asof` (benchmarks/asof_bench.py) on the PySpark of the library's matrix: on a Spark with
SQL's ASOF JOIN (4.3) a small run checks that join against `asof_join` and times it on the full
input, for backward and forward, and says why it is not measured for nearest; on a Spark without
one (4.0) it says so, and the other baselines still run (pandas-on-Spark in 4.0's ANSI mode).
The run leaves `spark.sql.join.asofJoin.enabled` as it found it, also when it fails. No figure
is held to a speed.

`benchmarks` is the checkout's folder, importable from the checkout's root (pytest's
`pythonpath`, pyproject.toml), where the matrix runs these tests.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pyspark
import pytest
from benchmarks.asof_baselines import SQL, SQL_FLAG, has_sql_asof_join
from benchmarks.asof_bench import AsofBenchOptions, quotes, run, trades
from pyspark.sql import SparkSession

HAS_SQL_ASOF_JOIN = tuple(map(int, pyspark.__version__.split(".")[:2])) >= (4, 3)
ROWS, CHECKED, KEYS = 3_000, 500, 10
SMALL = AsofBenchOptions(
    rows=ROWS, keys=KEYS, baseline_rows=CHECKED, check_rows=CHECKED, warmup_rows=0, partitions=2
)


def pandas_matches(spark: SparkSession, rows: int, direction: str) -> int:
    """How many of `rows` trades `pandas.merge_asof` matches on the bench's input."""
    left = trades(spark, rows, KEYS).toPandas().sort_values("time")
    right = quotes(spark, rows, KEYS).toPandas().sort_values("time")
    joined = pd.merge_asof(left, right, on="time", by="key", direction=direction)
    return int(joined["qid"].notna().sum())


def test_the_probe_finds_sql_asof_join_where_spark_has_it(spark: SparkSession) -> None:
    previous = spark.conf.get(SQL_FLAG, None)
    assert has_sql_asof_join(spark) == HAS_SQL_ASOF_JOIN
    assert spark.conf.get(SQL_FLAG, None) == previous


def test_sql_asof_join_is_checked_and_timed_on_the_full_input(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backward, beside a capped baseline: pandas-on-Spark (Spark 4.0's refuses ANSI mode
    unless told; the main suite runs `_joinAsOf` too), the flag unset before."""
    monkeypatch.setattr("benchmarks.asof_bench.CAPPED", ("pyspark.pandas",))
    spark.conf.unset(SQL_FLAG)
    figures = run(spark, SMALL, _quiet)
    assert spark.conf.get(SQL_FLAG, None) is None
    assert figures["spark_version"] == spark.version
    assert figures["pyspark.pandas"]["matched_trades"] == pandas_matches(spark, CHECKED, "backward")
    if not HAS_SQL_ASOF_JOIN:
        assert figures["spark_sql_asof_join"] == "not in this Spark" and SQL not in figures
        return
    assert figures["spark_sql_asof_join"] == "measured"
    sql, capped = figures[SQL], figures["pyspark.pandas"]
    assert sql["baseline"] == "Spark SQL LEFT ASOF JOIN"
    assert (sql["rows"], sql["capped"], sql["checked_trades"]) == (ROWS, False, CHECKED)
    assert (capped["rows"], capped["capped"]) == (CHECKED, True)
    assert sql["matched_trades"] == capped["matched_trades"]
    assert sql["rows_per_s"] > 0 and sql["ratio"] == sql["ratio_same_input"]
    assert sql["ratio"] == round(figures["rows_per_s"] / sql["rows_per_s"], 2)
    assert capped["ratio_same_input"] == round(
        figures["rows_on_baseline_input_per_s"] / capped["rows_per_s"], 2
    )


@pytest.mark.parametrize("direction", ["forward", "nearest"])
def test_forward_is_measured_and_nearest_is_not(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, direction: str
) -> None:
    """Without the capped baselines (the test above runs one), the flag false before."""
    monkeypatch.setattr("benchmarks.asof_bench.CAPPED", ())
    spark.conf.set(SQL_FLAG, "false")
    try:
        figures = run(spark, replace(SMALL, direction=direction, baseline_rows=ROWS), _quiet)
        assert spark.conf.get(SQL_FLAG) == "false"
    finally:
        spark.conf.unset(SQL_FLAG)
    status = figures["spark_sql_asof_join"]
    if not HAS_SQL_ASOF_JOIN:
        assert status == "not in this Spark" and SQL not in figures
    elif direction == "nearest":
        assert status == "in this Spark, but it has no nearest: not measured"
        assert SQL not in figures
    else:
        assert status == "measured" and figures[SQL]["rows"] == ROWS
        assert figures[SQL]["matched_trades"] == pandas_matches(spark, CHECKED, direction)


def test_a_failed_run_leaves_the_flag_as_it_was(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []

    def failing(spark: SparkSession, *_args: object) -> dict:
        seen.append(spark.conf.get(SQL_FLAG))
        raise RuntimeError("the run failed")

    monkeypatch.setattr("benchmarks.asof_bench._measured", failing)
    for flag in (None, "false"):
        if flag is None:
            spark.conf.unset(SQL_FLAG)
        else:
            spark.conf.set(SQL_FLAG, flag)
        with pytest.raises(RuntimeError, match="the run failed"):
            run(spark, SMALL, _quiet)
        assert spark.conf.get(SQL_FLAG, None) == flag
    spark.conf.unset(SQL_FLAG)
    assert seen == ["true", "true"]  # on for the run


def _quiet(text: str) -> None:
    pass
