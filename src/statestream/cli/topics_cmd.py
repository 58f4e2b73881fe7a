"""`statestream topics create`: the Kafka topics statestream uses."""

from __future__ import annotations

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from
from statestream.services.topics import create_topics

topics_app = typer.Typer(help="Manage statestream's Kafka topics.", no_args_is_help=True)


@topics_app.command("create")
def create(ctx: typer.Context) -> None:
    """Create the topics that do not exist yet (existing ones are reported and left as they are)."""
    results = create_topics(settings_from(ctx))
    table = Table(title="statestream topics create", title_justify="left")
    for column in ("topic", "state", "partitions", "config", "note"):
        table.add_column(column, overflow="fold")
    for result in results:
        config = " ".join(f"{k}={v}" for k, v in result.spec.config.items())
        state = f"[green]{result.state}[/]" if result.state == "created" else result.state
        table.add_row(result.name, state, str(result.partitions), config, result.note)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")
