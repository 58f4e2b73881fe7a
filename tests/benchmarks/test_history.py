"""benchmarks/HISTORY.md is generated from the results files, and stays in step with them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from benchmarks.bench_output import RESULTS_DIR_ENV
from benchmarks.history import COMMAND, HISTORY, history_text, main
from benchmarks.results_page import RESULTS

from statestream.cli import _bench


def _write(folder: Path, bench: str, *runs: tuple[str, dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"bench": bench, "date": date, "commit": "abc1234", "figures": figures})
        for date, figures in runs
    ]
    (folder / f"{bench}.jsonl").write_text("\n".join(lines) + "\n")


def test_the_committed_history_is_what_the_committed_results_make() -> None:
    assert sorted(RESULTS.glob("*.jsonl")), "no results files"
    assert HISTORY.read_text() == history_text(RESULTS), (
        f"benchmarks/HISTORY.md is stale: run `.venv/bin/{COMMAND}` and commit it"
    )
    assert main(["--check"]) == 0


def test_the_history_lists_every_run_of_each_bench_newest_first(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "join",
        ("2026-11-28T10:00:00+00:00", {"joins_per_s": 9_000_000, "ratio": 60.5}),
        ("2026-11-29T10:00:00+00:00", {"joins_per_s": 10_000_000, "ratio": 65.0}),
        ("2026-11-27T10:00:00+00:00", {"joins_per_s": 8_000_000, "ratio": 50.0}),
    )
    _write(tmp_path, "geo", ("2026-11-29T11:00:00+00:00", {"positions_per_s": 120_000}))
    text = history_text(tmp_path)
    assert text.startswith("# Benchmark history\n") and COMMAND in text.split("##")[0]
    geo, join = text.split("## `bench geo`")[1].split("## `bench join`")
    assert "1 recorded run," in geo and "| 120,000 |" in geo
    assert "3 recorded runs," in join and "| joins/s | ratio |" in join
    rows = [line for line in join.splitlines() if line.startswith("| 2026")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| 2026-11-29 10:00",
        "| 2026-11-28 10:00",
        "| 2026-11-27 10:00",
    ]
    assert rows[0].endswith("| 10,000,000 | 65 |")


def test_bench_record_writes_the_checkouts_history_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench --record` into the checkout's results folder (no other folder given) writes
    benchmarks/HISTORY.md beside it; here the checkout is a temporary folder."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").touch()
    monkeypatch.setattr(_bench, "project_root", lambda: tmp_path)
    monkeypatch.delenv(RESULTS_DIR_ENV, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # benchmark() may put the checkout on it
    _bench.record_results("join")
    try:
        _bench.recorded({"joins_per_s": 5_000_000, "ratio": 30.0})
    finally:
        _bench.record_results(None)
    results = tmp_path / "benchmarks" / "results"
    assert (results / "join.jsonl").is_file()
    history = (tmp_path / "benchmarks" / "HISTORY.md").read_text()
    assert history == history_text(results) and "| 5,000,000 | 30 |" in history
