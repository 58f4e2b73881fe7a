"""`statestream bench asof --json` on a small input, on the test run's SparkSession: its figures
are all there, each baseline matched what `pandas.merge_asof` matches, Spark 4.1 has no SQL
ASOF JOIN (tests/library/test_asof_bench_sql.py runs it on 4.3), a baseline that runs too long
is cut off, and a disagreement is counted; `python -m benchmarks.asof_bench --record` appends
the record `bench --record asof` appends. No figure is held to a speed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
from benchmarks.asof_baselines import (
    BASELINES,
    CAPPED,
    SQL,
    SQL_FLAG,
    disagreements,
    join_as_of,
    within,
)
from benchmarks.asof_bench import main, noop_seconds, quotes, statestream_join, trades, written
from benchmarks.bench_output import RESULTS_DIR_ENV, result_record
from benchmarks.results_page import load_runs
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

from statestream.cli import app

pytestmark = pytest.mark.integration


def pandas_matches(spark: SparkSession, rows: int, keys: int, direction: str) -> int:
    """How many trades `pandas.merge_asof` matches on the bench's input."""
    left = trades(spark, rows, keys).toPandas().sort_values("time")
    right = quotes(spark, rows, keys).toPandas().sort_values("time")
    joined = pd.merge_asof(left, right, on="time", by="key", direction=direction)
    return int(joined["qid"].notna().sum())


def test_a_small_run_prints_its_figures_as_json(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("statestream.jobs.session.spark_session", lambda *_a, **_k: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)  # the command stops its session: not ours
    args = ["bench", "asof", "--json", "--rows", "1500", "--keys", "100"]
    args += ["--baseline-rows", "1000", "--warmup-rows", "1000", "--direction", "nearest"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["rows"], figures["keys"], figures["direction"]) == (1_500, 100, "nearest")
    assert figures["rows_per_s"] > 0 and figures["rows_on_baseline_input_per_s"] > 0
    matched = pandas_matches(spark, 1_000, 100, "nearest")
    for key in CAPPED:
        baseline, name = figures[key], BASELINES[key]
        assert baseline["baseline"] == name
        assert (baseline["rows"], baseline["checked_trades"]) == (1_000, 1_000)
        assert baseline["matched_trades"] == matched
        assert baseline["rows_per_s"] > 0
        assert baseline["ratio"] == round(figures["rows_per_s"] / baseline["rows_per_s"], 2)
    assert figures["spark_sql_asof_join"] == "not in this Spark" and SQL not in figures


def test_a_baseline_that_runs_too_long_is_cut_off(spark: SparkSession, tmp_path: Path) -> None:
    inputs = written(spark, tmp_path, 20_000, 100)  # minutes for Spark's as-of join
    started = time.perf_counter()
    assert within(spark, 1.0, lambda: noop_seconds(join_as_of(inputs, "backward"))) is None
    assert time.perf_counter() - started < 30
    assert within(spark, 30.0, lambda: 1.5) == 1.5


def test_a_different_match_is_counted(spark: SparkSession, tmp_path: Path) -> None:
    inputs = written(spark, tmp_path, 1_000, 10)  # trades 990–999: each key's last, matched
    ours = statestream_join(inputs, "backward").localCheckpoint()  # joined once
    earlier = F.col("quote_time") - F.expr("INTERVAL 1 SECOND")
    shifted = ours.withColumn(
        "quote_time", F.when(F.col("tid").between(995, 997), earlier).otherwise(F.col("quote_time"))
    )
    assert disagreements(ours, ours)["other_match"] == 0
    found = disagreements(ours, shifted.where(F.col("tid") != 999))
    assert (found["trades"], found["missing"], found["other_match"]) == (1_000, 1, 4)


def test_the_plain_entry_records_what_bench_record_records(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """`python -m benchmarks.asof_bench --json --record` (on the test run's session, which it
    must not stop): one JSON object on stdout, the results line `bench --record asof` writes,
    and the session's settings as they were."""
    monkeypatch.setattr("benchmarks.asof_bench.plain_session", lambda *_a: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    monkeypatch.setenv(RESULTS_DIR_ENV, str(tmp_path))
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    args = ["--rows", "1200", "--keys", "50", "--baseline-rows", "1000", "--warmup-rows", "0"]
    assert main([*args, "--partitions", "3", "--json", "--record"]) == 0
    [run] = load_runs(tmp_path / "asof.jsonl")
    assert json.loads(capfd.readouterr().out) == run["figures"]
    assert run.keys() == result_record("asof", {}).keys()
    assert run["bench"] == "asof" and run["figures"]["rows"] == 1_200
    assert run["figures"]["partitions"] == 3 and run["figures"]["joinAsOf"]["rows"] == 1_000
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert spark.conf.get(SQL_FLAG, None) is None
