"""`statestream ingest sample`: put machine rows on Kafka, one record per quantity."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.ingest import SAMPLE_FILE, produce_machine_file

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
    {"thing", "quantity", "phenomenonTime", "result"}.
    """
    produced = produce_machine_file(settings_from(ctx), file, topic)
    console.print(
        f"produced [bold]{produced.records:,}[/] records from {produced.rows:,} rows of "
        f"{produced.path.name} to [bold]{produced.topic}[/]"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(ingest_app, name="ingest")
