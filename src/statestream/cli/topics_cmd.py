"""`statestream topics create`: the Kafka topics statestream uses."""

from __future__ import annotations

import typer
from rich.table import Table

from statestream.cli._common import console, err_console, settings_from
from statestream.config import KafkaRole
from statestream.services.kafka_security import grant_topics
from statestream.services.topics import create_topics

topics_app = typer.Typer(help="Manage statestream's Kafka topics.", no_args_is_help=True)


@topics_app.command("create")
def create(ctx: typer.Context) -> None:
    """Create the topics that do not exist yet (existing ones are reported and left as they are).

    On the local brokers, also grant the connector, jobs and dashboard users their ACLs on them.
    """
    results = create_topics(settings_from(ctx))
    table = Table(title="statestream topics create", title_justify="left")
    for column in ("topic", "state", "partitions", "config"):
        table.add_column(column, no_wrap=True)
    notes = any(result.note for result in results)
    if notes:
        table.add_column("note")
    for result in results:
        config = "\n".join(f"{k}={v}" for k, v in result.spec.config.items())
        state = f"[green]{result.state}[/]" if result.state == "created" else result.state
        row = [result.name, state, str(result.partitions), config]
        table.add_row(*row, *([result.note] if notes else []))
    console.print(table)
    for result in results:
        if result.warning:
            err_console.print(f"[yellow]warning:[/] {result.warning}", highlight=False)


_GRANTABLE: dict[str, KafkaRole] = {
    "jobs": "jobs",
    "dashboard": "dashboard",
    "connector": "connector",
}


@topics_app.command("grant")
def grant(
    ctx: typer.Context,
    topics: list[str] = typer.Argument(..., help="Topics of your own, e.g. a job's in and out."),
    role: str = typer.Option("jobs", help="jobs (read+write), dashboard (read), connector (write)"),
) -> None:
    """Let a component's user use topics of your own on the local brokers (statestream's own
    topics are granted by `services up` and `topics create`); nothing to do on another cluster."""
    if role not in _GRANTABLE:
        raise typer.BadParameter(f"expected jobs, dashboard or connector, got {role!r}")
    settings = settings_from(ctx)
    grant_topics(settings, topics, _GRANTABLE[role])
    if settings.kafka.local_users:
        console.print(f"statestream-{role} may now use {', '.join(topics)}")
    else:
        console.print(f"{settings.kafka.bootstrap_servers}: another cluster, with ACLs of its own")


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")
