"""What every `statestream bench …` command shares: finding its benchmark, --json, the Spark run,
--record.

Under --json stdout carries one JSON object and nothing else: progress lines go to stderr, and so
does what Spark's Python workers print. `statestream bench --record <bench>` also appends the
result, with its date, commit and machine, as one line to `benchmarks/results/<bench>.jsonl`,
and writes `benchmarks/HISTORY.md` again from those files (`benchmarks/history.py`): the figures
are data, committed with the code, and the docs' benchmark page plots them
(`benchmarks/results_page.py`).
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from statestream.cli._common import console, err_console
from statestream.config import project_root
from statestream.errors import EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from rich.table import Table

    from statestream.config import Settings


def benchmark(name: str) -> ModuleType:
    """The module `benchmarks.<name>` of the source checkout (the benchmarks are not installed)."""
    root = project_root()
    if not (root / "benchmarks" / "__init__.py").is_file():
        raise EnvironmentProblem(
            "the benchmarks are in the source checkout's benchmarks/ folder; "
            "run statestream from a checkout installed with `make setup`"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"benchmarks.{name}")


AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def narrator(quiet: bool) -> Callable[[str], None]:
    """What a benchmark says while it runs: "… text" lines on stderr, nothing when `quiet`
    (--json, whose stdout is the one JSON object)."""
    if quiet:
        return lambda text: None
    return lambda text: err_console.print(f"… {text}")


def run_on_spark(
    settings: Settings, app_name: str, as_json: bool, run: Callable[[SparkSession], dict]
) -> dict[str, Any]:
    """The figures of `run` on a Spark session of its own, stopped after.

    Under --json, what Spark's Python workers print goes to stderr: stdout is the JSON object.
    """
    from statestream.jobs.session import spark_session

    with stdout_to_stderr(as_json):  # Spark's Python workers print to the inherited stdout
        spark = spark_session(settings, app_name=app_name)
        try:
            return run(spark)
        finally:
            spark.stop()


RESULTS_DIR = "benchmarks/results"  # in the checkout (`project_root`)
RESULTS_DIR_ENV = "STATESTREAM_BENCH_RESULTS_DIR"  # another folder for them (tests)
_recording: list[str] = []  # the bench `bench --record` runs, when it asked


def record_results(bench: str | None) -> None:
    """Which bench now runs and appends its result (`bench --record`); None: none records."""
    _recording[:] = [bench] if bench else []


def recorded(figures: dict[str, Any]) -> None:
    """Append `figures` to the running bench's results file, if `bench --record` asked, and
    write the checkout's `benchmarks/HISTORY.md` again (not for another results folder)."""
    if not _recording:
        return
    bench = _recording[0]
    folder = Path(os.environ.get(RESULTS_DIR_ENV) or project_root() / RESULTS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps(result_record(bench, figures))
    with (folder / f"{bench}.jsonl").open("a") as results:
        results.write(line + "\n")
    err_console.print(f"recorded in {folder / bench}.jsonl", highlight=False)
    if not os.environ.get(RESULTS_DIR_ENV):  # the checkout's results: its HISTORY.md follows them
        history = benchmark("history").write_history(folder, folder.parent / "HISTORY.md")
        err_console.print(f"and {history} written again", highlight=False)


def result_record(bench: str, figures: dict[str, Any]) -> dict[str, Any]:
    """One results line: the bench, when (UTC), the commit (and whether the tree had changes),
    the machine (cores, load average, Python) and the figures as --json prints them."""
    return {
        "bench": bench,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
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
            ["git", *args], cwd=project_root(), capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    return {"commit": commit or None, "changed": bool(git("status", "--porcelain", "-uno"))}


def print_figures(
    figures: dict[str, Any], as_json: bool, table: Callable[[], Table], min_width: int = 100
) -> None:
    """A benchmark's result: one JSON object on stdout with --json, else `table()`, at least
    `min_width` columns wide; recorded when `bench --record` asked."""
    recorded(figures)
    if as_json:
        print(json.dumps(figures))
        return
    console.print(table(), width=max(console.width, min_width))


@contextmanager
def stdout_to_stderr(active: bool) -> Iterator[None]:
    """Send file descriptor 1 (and what child processes inherit) to stderr while active."""
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
