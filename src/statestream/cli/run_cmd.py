"""`statestream run <job>`: run one of statestream's Spark jobs."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from

run_app = typer.Typer(help="Run a Spark job.", no_args_is_help=True)


@run_app.command("demo-counts")
def demo_counts(
    ctx: typer.Context,
    topic: Annotated[
        str | None, typer.Option("--topic", "-t", help="Topic to read (default: machine.data).")
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Forget the checkpoint and count the whole topic.")
    ] = False,
) -> None:
    """Count the observations per thing on machine.data with a Structured Streaming query.

    The query (availableNow) reads what arrived since its last run and keeps running counts.
    """
    from statestream.jobs.demo_counts import QUERY_NAME, run_demo_counts
    from statestream.jobs.session import spark_session

    settings = settings_from(ctx)
    spark = spark_session(settings, app_name=QUERY_NAME)
    try:
        result = run_demo_counts(spark, settings, topic=topic, fresh=fresh)
    finally:
        spark.stop()
    console.print(
        f"query [bold]{QUERY_NAME}[/] read [bold]{result.records_read:,}[/] new records from "
        f"{result.topic} (checkpoint {result.checkpoint})"
    )
    if not result.counts:
        console.print("no new records since the last run; --fresh counts the whole topic again")
        return
    console.print("observations per thing since the query's first run:")
    table = Table()
    table.add_column("thing")
    table.add_column("observations", justify="right")
    for thing, count in sorted(result.counts.items()):
        table.add_row(thing, f"{count:,}")
    table.add_row("[bold]total[/]", f"[bold]{sum(result.counts.values()):,}[/]")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(run_app, name="run")
