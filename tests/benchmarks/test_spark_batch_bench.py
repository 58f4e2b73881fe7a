"""`statestream bench spark-batch --json` on a small input, on the test run's SparkSession: its
figures are all there, and its pairs are `complement_join`'s. No figure is held to a speed."""

from __future__ import annotations

import json

import pytest
from benchmarks.spark_batch_bench import SPEC, observations
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from statestream.cli import app
from statestream.spark import complement_join

pytestmark = pytest.mark.integration


def test_a_small_run_prints_its_figures_as_json(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("statestream.jobs.session.spark_session", lambda *_a, **_k: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)  # the command stops its session: not ours
    args = ["bench", "spark-batch", "--json", "--records", "20000", "--baseline-records", "2000"]
    args += ["--warmup-records", "3000"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["records"], figures["things"]) == (20_000, 1_000)
    assert figures["warmup_records"] == 3_000 and figures["cached_input"] is True
    assert figures["records_per_s"] > 0 and figures["seconds"] >= 0
    assert figures["baseline"] == "pyspark.pandas.merge_asof backward + forward"
    assert (figures["baseline_records"], figures["baseline_capped"]) == (2_000, True)
    assert figures["baseline_records_per_s"] > 0 and figures["baseline_pairs"] > 0
    assert figures["ratio"] == round(
        figures["records_per_s"] / figures["baseline_records_per_s"], 2
    )
    assert figures["pairs"] == complement_join(observations(spark, 20_000, 1_000), [SPEC]).count()
    on_baseline_input = complement_join(observations(spark, 2_000, 1_000), [SPEC]).count()
    assert figures["spec_pairs_on_baseline_input"] == on_baseline_input
    assert 0 < figures["spec_pairs_found_by_baseline"] <= on_baseline_input
