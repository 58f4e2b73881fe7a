"""`statestream bench small --json` with few repeats, on the test run's SparkSession: its figures
are all there, the joins' outputs are the library example's, and the session's settings come
back; the summary's arithmetic and the results page without Spark. No figure is held to a
speed."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from benchmarks.bench_output import result_record
from benchmarks.results_page import results_markdown
from benchmarks.small_bench import LEFT, QUERIES, summary
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from statestream.cli import app
from statestream.codecs.formats import WIDE_ROW_NON_QUANTITIES
from tests.spark.test_batch_example import pairs_in_time_order

TIMES = ("_s", "_min_s")
RATIOS = ("complement_join_to_groupby", "asof_join_to_groupby", "complement_join_to_python_udf",
          "asof_join_to_python_udf", "python_udf_to_groupby")  # fmt: skip


def sample_values() -> Counter[str]:
    """The sample's values per quantity: its narrow records (each a number in this sample)."""
    text = resources.files("statestream.data").joinpath("machine_events.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    return Counter(
        name
        for row in rows
        for name, value in row.items()
        if name not in WIDE_ROW_NON_QUANTITIES and value is not None
    )


@pytest.mark.integration
def test_a_small_run_prints_its_figures_as_json(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("statestream.jobs.session.spark_session", lambda *_a, **_k: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)  # the command stops its session: not ours
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    done = CliRunner().invoke(app, ["bench", "small", "--json", "--repeat", "2"])
    assert done.exit_code == 0, done.output
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    values = sample_values()
    assert (figures["records"], figures["things"], figures["repeat"]) == (values.total(), 3, 2)
    assert (figures["shuffle_partitions"], figures["adaptive"]) == (200, True)
    for name in QUERIES:
        assert all(figures[f"{name}{suffix}"] > 0 for suffix in TIMES)
        assert figures[f"{name}_min_s"] <= figures[f"{name}_s"]
        assert figures[f"{name}_partitions"] >= 1
    assert all(figures[ratio] > 0 for ratio in RATIOS)
    # the ratio is of the unrounded medians: the printed seconds give it to within rounding
    assert figures["complement_join_to_groupby"] == pytest.approx(
        figures["complement_join_s"] / figures["groupby_s"], rel=0.01
    )
    assert figures["complement_join_rows"] == pairs_in_time_order()
    assert figures["asof_join_rows"] == values[LEFT]  # every left row once
    assert figures["groupby_rows"] == figures["python_udf_rows"] == 3
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions  # the session's again


def test_the_summary_takes_medians_fastest_runs_and_ratios_of_medians() -> None:
    found = summary(
        {
            "complement_join": [0.9, 0.3, 0.6],
            "asof_join": [0.8, 0.4],
            "groupby": [0.2, 0.3, 0.1],
            "python_udf": [0.4],
        }
    )
    assert (found["complement_join_s"], found["complement_join_min_s"]) == (0.6, 0.3)
    assert (found["asof_join_s"], found["groupby_s"]) == (0.6, 0.2)
    assert found["complement_join_to_groupby"] == 3.0
    assert found["asof_join_to_python_udf"] == 1.5
    assert found["python_udf_to_groupby"] == 2.0
    assert set(RATIOS) <= set(found)


def test_the_results_page_plots_the_timings_and_tabulates_the_ratios(tmp_path: Path) -> None:
    figures = {"records": 19_825, "groupby_s": 0.25, "groupby_min_s": 0.2, "asof_join_s": 0.5}
    figures |= {"asof_join_min_s": 0.4, "asof_join_to_groupby": 2.0}
    line = json.dumps(result_record("small", figures))
    (tmp_path / "small.jsonl").write_text(line + "\n")
    page = results_markdown(tmp_path)
    assert "### `bench small`: 1 recorded run" in page
    assert page.count("<svg") == 1 and "small: time (s)" in page
    assert "| groupby (s) | asof join (s) | asof join to groupby |" in page
    assert "| 0.25 | 0.5 | 2 |" in page
