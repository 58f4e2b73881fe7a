"""`statestream run <command>`: run statestream's streaming queries.

One command per command of the query registry (`statestream.queries`), made from the queries'
declarations: their help, topics and options. `run pipeline` (its own module) runs several.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from
from statestream.cli._queries import Watched, run_watched
from statestream.config.sections import TopicsSettings
from statestream.queries.definition import QueryDef
from statestream.queries.launch import RunOptions, check_before_start, commands, start_queries

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from statestream.config import Settings

run_app = typer.Typer(
    help="Run a streaming query (one command per registered query), or the whole pipeline.",
    no_args_is_help=True,
)


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


class StartingOffsets(enum.StrEnum):
    earliest = "earliest"
    latest = "latest"


def _query_parameters(command: str, definitions: list[QueryDef]) -> list[inspect.Parameter]:
    """The options of `run <command>`: the ones every query command takes."""
    first = definitions[0]
    reads = _topic_names(first.input_topics) if len(first.input_topics) == 1 else "its topics"
    options: list[tuple[str, Any, Any, Any]] = [
        (
            "available_now",
            bool,
            typer.Option("--available-now", help=f"Process what is in {reads}, then stop."),
            False,
        ),
        (
            "max_offsets_per_trigger",
            int | None,
            typer.Option(
                "--max-offsets-per-trigger",
                min=1,
                help="Cap on records per micro-batch (default: "
                f"{first.section}.max_offsets_per_trigger).",
            ),
            None,
        ),
        (
            "starting",
            StartingOffsets,
            typer.Option("--from", help=f"Where a new query starts reading {reads}."),
            StartingOffsets.earliest,
        ),
        (
            "checkpoint",
            Path | None,
            typer.Option(
                "--checkpoint",
                help=f"Checkpoint folder (default: {first.name} in the checkpoint root).",
            ),
            None,
        ),
        (
            "pause_after_commit",
            float,
            typer.Option("--pause-after-commit", hidden=True, help="Crash tests only."),
            0.0,
        ),
    ]
    parameters = [inspect.Parameter("ctx", _KEYWORD, annotation=typer.Context)]
    for name, kind, option, default in options:
        annotation = Annotated[kind, option]  # type: ignore[valid-type]
        parameters.append(inspect.Parameter(name, _KEYWORD, annotation=annotation, default=default))
    return parameters


_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _topic_names(fields: tuple[str, ...]) -> str:
    """The default names of topics given as fields of the topic settings."""
    topics = TopicsSettings()
    return ", ".join(getattr(topics, field) for field in fields)


def _query_help(definitions: list[QueryDef]) -> str:
    """`run <command>`'s help: the first query's `help`, its topics, how it stops."""
    first = definitions[0]
    outputs = dict.fromkeys(t for d in definitions for t in d.output_topics)
    return (
        f"{inspect.cleandoc(first.help)}\n\n"
        f"Reads {_topic_names(first.input_topics)}; writes {_topic_names(tuple(outputs))} "
        "(topic names of the default settings). Without --available-now it runs until "
        "stopped; Ctrl-C stops it cleanly."
    )


def query_command(command: str, definitions: list[QueryDef]) -> Callable[..., None]:
    """The function of `run <command>`: its registered queries in one Spark application."""

    def run(
        ctx: typer.Context,
        available_now: bool,
        max_offsets_per_trigger: int | None,
        starting: StartingOffsets,
        checkpoint: Path | None,
        pause_after_commit: float,
    ) -> None:
        options = RunOptions(
            available_now=available_now,
            max_offsets_per_trigger=max_offsets_per_trigger,
            starting_offsets=starting.value,
            checkpoint=checkpoint,
            pause_after_commit_s=pause_after_commit,
        )
        run_registered(settings_from(ctx), command, definitions, options)

    parameters = _query_parameters(command, definitions)
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__doc__ = _query_help(definitions)
    run.__name__ = command.replace("-", "_")
    return run


def run_registered(
    settings: Settings, command: str, definitions: list[QueryDef], options: RunOptions
) -> None:
    """Check, start and watch the queries of `run <command>`; print their summaries after."""
    for index, definition in enumerate(definitions):
        check_before_start(settings, definition, options.for_query(definition, first=index == 0))
    printers = [definition.new_printer() for definition in definitions]

    def start(spark: SparkSession) -> list[Watched]:
        started = start_queries(spark, settings, definitions, options)
        return [Watched(q, p.line) for q, p in zip(started, printers, strict=True)]

    run_watched(settings, f"statestream-{command}", start)
    for printer in printers:
        if summary := printer.summary():
            console.print(summary, highlight=False)


def register(app: typer.Typer) -> None:
    """Add `run` and one `run <command>` per command of the query registry."""
    for command, definitions in commands().items():
        run_app.command(command)(query_command(command, definitions))
    app.add_typer(run_app, name="run")
