"""`statestream ingest sample`: put machine rows on Kafka, one record per quantity."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.ingest import SAMPLE_FILE, SimulationPlan, file_lines, run_simulation

ingest_app = typer.Typer(help="Get machine data into Kafka.", no_args_is_help=True)


@ingest_app.command("sample")
def sample(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Option("--file", "-f", help="JSON-lines file of machine rows.")
    ] = SAMPLE_FILE,
    topic: Annotated[
        str | None, typer.Option("--topic", "-t", help="Target topic (default: machine.data).")
    ] = None,
) -> None:
    """Write every quantity of every row of FILE (default: the bundled sample) to Kafka.

    Each record has key `thing.quantity` and value
    {"thing", "quantity", "phenomenonTime", "result"} (or the envelope `ingest.envelope` names).
    The same as `statestream simulate FILE --to kafka --rate max`.
    """
    plan = SimulationPlan(lines=list(file_lines(file)))
    result = run_simulation(settings_from(ctx), plan, target="kafka", topic=topic)
    counts = result.counts
    assert counts is not None
    dead = f", {counts.dead_letters:,} rows to the dead-letter topic" if counts.dead_letters else ""
    console.print(
        f"produced [bold]{counts.records:,}[/] records from {result.rows:,} rows of "
        f"{file.name} to [bold]{result.destination}[/]{dead}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(ingest_app, name="ingest")
