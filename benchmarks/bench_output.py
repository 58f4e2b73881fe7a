"""What a bench gives back, run by `statestream bench …` or as `python -m benchmarks.<bench>`:
its results line (date, commit, machine, figures) appended to `benchmarks/results/<bench>.jsonl`
with `benchmarks/HISTORY.md` written again (--record), and stdout kept for the one JSON object
(--json).

Plain Python (no typer, no rich, no statestream settings): the benches that also run without
the pipeline's CLI (`python -m benchmarks.asof_bench` in a venv with another PySpark) record
their runs as the CLI does. The results files are the docs' benchmark page's data
(`benchmarks/results_page.py` reads them).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.history import write_history

CHECKOUT = Path(__file__).resolve().parents[1]  # the source checkout these benchmarks are in
RESULTS_DIR = "benchmarks/results"  # in the checkout
RESULTS_DIR_ENV = "STATESTREAM_BENCH_RESULTS_DIR"  # another folder for them (tests)


def record_result(bench: str, figures: dict[str, Any], checkout: Path = CHECKOUT) -> list[Path]:
    """Append `figures` as one results line (`result_record`) to `<bench>.jsonl` in the
    checkout's results folder, or in $STATESTREAM_BENCH_RESULTS_DIR when it is set; for the
    checkout's own folder, write its `benchmarks/HISTORY.md` again. The files written: the
    results file, then HISTORY.md when written."""
    other = os.environ.get(RESULTS_DIR_ENV)
    folder = Path(other) if other else checkout / RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / f"{bench}.jsonl"
    with results.open("a") as lines:
        lines.write(json.dumps(result_record(bench, figures)) + "\n")
    if other:
        return [results]
    return [results, write_history(folder, folder.parent / "HISTORY.md")]


def result_record(bench: str, figures: dict[str, Any]) -> dict[str, Any]:
    """One results line: the bench, when (UTC), the commit (and whether the tree had changes),
    the machine (cores, load average, Python) and the figures as --json prints them."""
    # timezone.utc, not 3.11's datetime.UTC: the library's Python 3.10 venvs run benches too
    now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017
    return {
        "bench": bench,
        "date": now.isoformat(timespec="seconds"),
        **_commit(),
        "machine": {
            "cores": os.cpu_count(),
            "load_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
        "figures": figures,
    }


def _commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=CHECKOUT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    return {"commit": commit or None, "changed": bool(git("status", "--porcelain", "-uno"))}


@contextmanager
def stdout_to_stderr(active: bool) -> Iterator[None]:
    """Send file descriptor 1 (and what child processes inherit) to stderr while active: under
    --json stdout carries the one JSON object, and Spark's Python workers print to the stdout
    they inherit."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
