"""Benchmark results as data: a recorded run's line, and the docs' page made from the files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.bench_output import result_record
from benchmarks.results_page import (
    MARKER,
    RESULTS,
    history_markdown,
    load_runs,
    on_page_markdown,
    results_markdown,
)

from tests.support import run_cli


def _write(folder: Path, bench: str, *figures: dict) -> None:
    lines = [json.dumps(result_record(bench, f)) for f in figures]
    (folder / f"{bench}.jsonl").write_text("\n".join([*lines, "not json"]) + "\n")


def test_a_recorded_run_carries_its_date_commit_machine_and_figures() -> None:
    record = result_record("ingest", {"rows_per_s": 1000})
    assert record["bench"] == "ingest" and record["figures"] == {"rows_per_s": 1000}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", record["date"])
    assert record["commit"] is None or re.fullmatch(r"[0-9a-f]{7,}", record["commit"])
    assert record["machine"]["cores"] >= 1 and record["machine"]["load_1m"] >= 0


def test_the_page_plots_and_tabulates_each_bench(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "ingest",
        {"rows_per_s": 30_000, "paho": {"rows_per_s": 20_000}, "seconds": 3},
        {"rows_per_s": 36_000, "paho": {"rows_per_s": 21_000}, "seconds": 3},
    )
    _write(tmp_path, "pipeline", {"records_per_s": 200_000, "latency_p50_s": 0.34})
    assert [len(load_runs(p)) for p in sorted(tmp_path.glob("*.jsonl"))] == [2, 1]
    page = results_markdown(tmp_path)
    ingest, pipeline = page.split("### `bench pipeline`")
    assert ingest.count("<svg") == 1 and pipeline.count("<svg") == 2  # no latency for ingest
    assert "paho rows_per_s" in ingest and "| 36,000 | 21,000 |" in ingest
    assert ingest.index("| 36,000 |") < ingest.index("| 30,000 |")  # the latest run first
    assert ingest.count("<polyline") == 2 and "latency_p50_s" in pipeline


def test_only_the_page_with_the_marker_changes(tmp_path: Path) -> None:
    other = "# Some page\n"
    assert on_page_markdown(other, None, None, None) == other
    assert MARKER not in on_page_markdown(f"# Benchmarks\n{MARKER}\n", None, None, None)
    assert "No run is recorded yet" in results_markdown(tmp_path)


def test_bench_record_appends_the_run_to_its_bench_file(tmp_path: Path) -> None:
    args = ("bench", "--record", "join", "--records", "2000", "--baseline-records", "1000")
    env = {"STATESTREAM_BENCH_RESULTS_DIR": str(tmp_path)}
    for _ in range(2):
        done = run_cli(*args, "--json", env=env)
        assert done.exit_code == 0, done.stderr
    [run, again] = load_runs(tmp_path / "join.jsonl")
    assert run["bench"] == again["bench"] == "join"
    assert run["figures"]["records"] == 2000 and run["figures"]["joins_per_s"] > 0
    assert [path.name for path in tmp_path.iterdir()] == ["join.jsonl"]


def test_asof_runs_with_and_without_the_sql_baseline_share_one_table(tmp_path: Path) -> None:
    """`bench asof`'s recorded runs (Spark 4.1: no SQL ASOF JOIN) beside a run with one."""
    [recorded] = load_runs(RESULTS / "asof.jsonl")[:1]
    sql = {"baseline": "Spark SQL LEFT ASOF JOIN", "rows": 10_000_000, "capped": False}
    sql |= {"rows_per_s": 300_000, "ratio": 1.35, "ratio_same_input": 1.35}
    later = {**recorded, "date": "2099-01-01T00:00:00+00:00"}
    later["figures"] = {
        **recorded["figures"],
        "SQL ASOF JOIN": sql,
        "spark_sql_asof_join": "measured",
    }
    lines = [json.dumps(recorded), json.dumps(later)]
    (tmp_path / "asof.jsonl").write_text("\n".join(lines) + "\n")
    table = history_markdown(tmp_path, level=2)
    header, _, newer, older = [line for line in table.splitlines() if line.startswith("|")]
    assert "| SQL ASOF JOIN rows/s |" in header and "| SQL ASOF JOIN ratio same input |" in header
    assert "| 300,000 |" in newer and newer.endswith("| 1.35 | 1.35 |")
    assert older.endswith("| – | – |") and older.count("–") == 3
