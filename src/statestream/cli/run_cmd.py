"""`statestream run <job>`: run one of statestream's Spark jobs."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from
from statestream.cli._queries import Watched, run_watched

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from statestream.config import Settings
    from statestream.exactly_once.sink import QueryOptions
    from statestream.queries.join.job import JoinJobOptions

Options = TypeVar("Options", bound="QueryOptions")

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


class StartingOffsets(enum.StrEnum):
    earliest = "earliest"
    latest = "latest"


AvailableNow = Annotated[
    bool, typer.Option("--available-now", help="Process what is in the topic, then stop.")
]
MaxOffsetsPerTrigger = Annotated[
    int | None,
    typer.Option("--max-offsets-per-trigger", min=1, help="Cap on records per micro-batch."),
]
PauseAfterCommit = Annotated[
    float, typer.Option("--pause-after-commit", hidden=True, help="Crash tests only.")
]


def starting_option(topic: str) -> Any:
    """The `--from` option of a query that reads `topic`."""
    return typer.Option("--from", help=f"Where a new query starts reading {topic}.")


def checkpoint_option(query_name: str) -> Any:
    """The `--checkpoint` option of query `query_name`."""
    return typer.Option(
        "--checkpoint", help=f"Checkpoint folder (default: {query_name} in the checkpoint root)."
    )


def job_options(
    options_type: type[Options],
    available_now: bool,
    max_offsets_per_trigger: int | None,
    starting: StartingOffsets,
    checkpoint: Path | None,
    pause_after_commit: float,
) -> Options:
    """A job's options from the options every `run` query command takes (`--available-now`,
    `--max-offsets-per-trigger`, `--from`, `--checkpoint`, `--pause-after-commit`)."""
    return options_type(
        available_now=available_now,
        max_offsets_per_trigger=max_offsets_per_trigger,
        starting_offsets=starting.value,
        checkpoint=checkpoint,
        pause_after_commit_s=pause_after_commit,
    )


@run_app.command("join")
def join(
    ctx: typer.Context,
    available_now: AvailableNow = False,
    max_offsets_per_trigger: MaxOffsetsPerTrigger = None,
    starting: Annotated[
        StartingOffsets, starting_option("machine.data")
    ] = StartingOffsets.earliest,
    checkpoint: Annotated[Path | None, checkpoint_option("join")] = None,
    pause_after_commit: PauseAfterCommit = 0.0,
) -> None:
    """Join speed ⋈ torque → power (the specs of the settings) for every thing, exactly once.

    Reads machine.data, joins each thing's series with the complement-join engine (state in
    Spark's RocksDB state store, checkpointed) and writes the pairs to machine.out, late records
    to the late topic and malformed ones to the dead-letter topic, each batch in one Kafka
    transaction. Without --available-now it runs until stopped; Ctrl-C stops it cleanly.
    """
    from statestream.queries.join.job import JoinJobOptions

    settings = settings_from(ctx)
    options = job_options(
        JoinJobOptions,
        available_now,
        max_offsets_per_trigger,
        starting,
        checkpoint,
        pause_after_commit,
    )
    run_watched(
        settings, "statestream-join", lambda spark: [watched_join(spark, settings, options)]
    )


def watched_join(spark: SparkSession, settings: Settings, options: JoinJobOptions) -> Watched:
    """The join query started on `spark`, with the line printed for each of its batches."""
    from statestream.queries.join import QUERY
    from statestream.queries.join.job import start_join_query

    query = start_join_query(spark, settings, options)
    return Watched(query, QUERY.batch_line)


@run_app.command("geo")
def geo(
    ctx: typer.Context,
    available_now: AvailableNow = False,
    max_offsets_per_trigger: MaxOffsetsPerTrigger = None,
    starting: Annotated[
        StartingOffsets, starting_option("input.vehicle.positions")
    ] = StartingOffsets.earliest,
    checkpoint: Annotated[Path | None, checkpoint_option("geo")] = None,
    pause_after_commit: PauseAfterCommit = 0.0,
) -> None:
    """Vehicle positions → H3 cells in tumbling event-time windows, exactly once.

    Reads input.vehicle.positions, places each position with a GPS fix in its H3 cell
    (geo.resolution) and aggregates per cell and window (geo.window_s): distinct vehicles,
    positions, mean speed and delay. Early results on every batch that changes a window, the
    final one when the watermark (newest event time − geo.disorder_s) passes the window's end,
    again final for each late update within geo.allowed_lateness_s; later positions go to the
    late topic, undecodable ones to the dead-letter topic. Results go to analytics.vehicle.cells.
    The bunching alerts run alongside as their own query, in the same Spark application: two
    vehicles of a route and direction within geo.bunching_m for geo.bunching_s of event time
    give one alert per pair and episode on analytics.vehicle.alerts (checkpoint bunching, or
    DIR-bunching beside --checkpoint DIR). Without --available-now it runs until stopped;
    Ctrl-C stops it cleanly.
    """
    from statestream.queries.geo.job import GeoJobOptions
    from statestream.queries.geo.vehicle_app import start_vehicle_queries

    settings = settings_from(ctx)
    options = job_options(
        GeoJobOptions,
        available_now,
        max_offsets_per_trigger,
        starting,
        checkpoint,
        pause_after_commit,
    )

    def start(spark: SparkSession) -> list[Watched]:
        started = start_vehicle_queries(spark, settings, options)
        return [Watched(query, line) for query, line in started]

    run_watched(settings, "statestream-geo", start)


def register(app: typer.Typer) -> None:
    app.add_typer(run_app, name="run")
