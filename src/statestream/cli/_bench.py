"""What every `statestream bench …` command shares: finding its benchmark, --json, the Spark run,
--record.

Under --json stdout carries one JSON object and nothing else: progress lines go to stderr, and so
does what Spark's Python workers print. `statestream bench --record <bench>` also appends the
result, with its date, commit and machine, as one line to `benchmarks/results/<bench>.jsonl`,
and writes `benchmarks/HISTORY.md` again from those files (`benchmarks/history.py`): the figures
are data, committed with the code, and the docs' benchmark page plots them
(`benchmarks/results_page.py`). What needs no typer or rich, the results line and stdout kept
for --json, is `benchmarks/bench_output.py`'s: the benches run without this CLI use it too.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
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

    # Spark's Python workers print to the inherited stdout
    with benchmark("bench_output").stdout_to_stderr(as_json):
        spark = spark_session(settings, app_name=app_name)
        try:
            return run(spark)
        finally:
            spark.stop()


_recording: list[str] = []  # the bench `bench --record` runs, when it asked


def record_results(bench: str | None) -> None:
    """Which bench now runs and appends its result (`bench --record`); None: none records."""
    _recording[:] = [bench] if bench else []


def recorded(figures: dict[str, Any]) -> None:
    """Append `figures` to the running bench's results file, if `bench --record` asked, and
    write the checkout's `benchmarks/HISTORY.md` again (not for another results folder):
    `benchmarks/bench_output.py`'s `record_result`, which `python -m benchmarks.<bench>` calls
    too."""
    if not _recording:
        return
    written = benchmark("bench_output").record_result(_recording[0], figures, project_root())
    err_console.print(f"recorded in {written[0]}", highlight=False)
    for history in written[1:]:
        err_console.print(f"and {history} written again", highlight=False)


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
