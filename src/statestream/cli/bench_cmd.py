"""`statestream bench …`: benchmarks that print figures and ratios against a baseline.

The benchmarks live in the source checkout's benchmarks/ folder; they are not installed with the
package, so these commands run from a checkout (as `make setup` installs it).
"""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, err_console
from statestream.config import project_root
from statestream.errors import EnvironmentProblem

bench_app = typer.Typer(
    help="Benchmarks: figures and ratios against a baseline run in the same process.",
    no_args_is_help=True,
)


def _benchmark(name: str) -> ModuleType:
    root = project_root()
    if not (root / "benchmarks" / "__init__.py").is_file():
        raise EnvironmentProblem(
            "the benchmarks are in the source checkout's benchmarks/ folder; "
            "run statestream from a checkout installed with `make setup`"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"benchmarks.{name}")


@bench_app.command("join")
def bench_join(
    records: Annotated[
        int, typer.Option("--records", min=1000, help="Records per input for the engine.")
    ] = 1_000_000,
    baseline_records: Annotated[
        int,
        typer.Option(
            "--baseline-records", min=1000, help="Records per input for the per-record baseline."
        ),
    ] = 200_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The join engine against a per-record pure-Python implementation of the same spec.

    Inputs: the spec's blocks of five (one thing), and the real sample data's speed ⋈ torque
    cloned into many things. Prints records/s, joins/s (pairs/s), pairs, peak state (records
    held) and the engine/baseline ratio of joins/s.
    """
    module = _benchmark("join_bench")
    say = (lambda text: None) if as_json else (lambda text: err_console.print(f"… {text}"))
    figures = module.run(records, min(baseline_records, records), say)
    if as_json:
        print(json.dumps(figures))
        return
    table = Table(title="statestream bench join (M = million per second)")
    for column in (
        "input",
        "records",
        "pairs",
        "records/s",
        "joins/s",
        "peak state",
        "baseline joins/s",
        "ratio",
    ):
        table.add_column(column, justify="right" if column != "input" else "left")
    sample = figures["sample"]
    for label, row in (("blocks of 5", figures), (f"sample, {sample['things']} things", sample)):
        table.add_row(
            label,
            f"{row['records']:,}",
            f"{row['pairs']:,}",
            _millions(row["records_per_s"]),
            _millions(row["joins_per_s"]),
            f"{row['peak_state']:,}",
            _millions(row["baseline_joins_per_s"]),
            f"{row['ratio']}×",
        )
    console.print(table, width=max(console.width, 110))


def _millions(per_second: float) -> str:
    return f"{per_second / 1e6:.2f} M"


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
