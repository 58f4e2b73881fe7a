"""`statestream run pipeline`: join, statistics and InfluxDB sink in one Spark application."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.cli._queries import Watched, watch
from statestream.cli.run_cmd import StartingOffsets, run_app
from statestream.errors import StatestreamError
from statestream.queries.launch import RunOptions, check_before_start, start_queries

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from statestream.config import Settings
    from statestream.queries.definition import BatchPrinter, QueryDef


def pipeline(
    ctx: typer.Context,
    available_now: Annotated[
        bool,
        typer.Option(
            "--available-now",
            help="Process what is in the topics, one query after the other, then stop.",
        ),
    ] = False,
    starting: Annotated[
        StartingOffsets,
        typer.Option("--from", help="Where new queries start reading their topics."),
    ] = StartingOffsets.earliest,
    stats: Annotated[
        bool, typer.Option("--stats/--no-stats", help="Run the statistics query.")
    ] = True,
    sink: Annotated[
        bool, typer.Option("--sink/--no-sink", help="Run the InfluxDB sink query.")
    ] = True,
    without: Annotated[
        list[str] | None,
        typer.Option(
            "--without",
            metavar="QUERY",
            help="Leave out this query (its name, as `statestream status` shows it); repeatable.",
        ),
    ] = None,
    vehicles: Annotated[
        bool,
        typer.Option(
            "--vehicles/--no-vehicles",
            help="Also run the vehicle use case's queries (those of run geo: H3 cells, bunching).",
        ),
    ] = False,
) -> None:
    """The machine use case's queries as one Spark application: join, statistics, sink, ….

    Every registered query of the machine use case (join, stats, quantity_stats, sink_influx;
    with --vehicles also those of `run geo`) shares one SparkSession (so the whole pipeline fits
    a small machine), and each keeps its own checkpoint in the checkpoint root, the same one its
    `run <command>` uses, so you can switch between the two ways of running them. Each batch
    prints one line, prefixed with its query. Without --available-now the queries run side by
    side until stopped, each started once the one before has run its first batch; Ctrl-C stops
    them all cleanly.
    """
    from statestream.jobs.session import spark_session
    from statestream.queries import pipeline_queries

    settings = settings_from(ctx)
    left_out = ({"stats"} if not stats else set()) | ({"sink_influx"} if not sink else set())
    queries = pipeline_queries(vehicles=vehicles)
    unknown = set(without or ()) - {q.name for q in queries}
    if unknown:
        known = ", ".join(q.name for q in queries)
        raise StatestreamError(f"--without {', '.join(sorted(unknown))}: the queries are {known}")
    left_out |= set(without or ())
    queries = [q for q in queries if q.name not in left_out]
    options = RunOptions(starting_offsets=starting.value, available_now=available_now)
    for query in queries:  # what a query cannot run stops the command before Spark starts
        check_before_start(settings, query, options.for_query(query))
    printers = {query.name: query.new_printer() for query in queries}
    spark = spark_session(settings, app_name="statestream-pipeline")
    try:
        if available_now:
            for query in queries:  # each query reads what the one before it wrote
                watch([_started(spark, settings, query, options, printers[query.name])])
        else:
            started: list[Watched] = []
            for query in queries:  # one after the other's first batch (see below)
                _after_first_batches(started)
                started.append(_started(spark, settings, query, options, printers[query.name]))
            names = ", ".join(w.query.name for w in started)
            console.print(f"queries {names} started; Ctrl-C stops them")
            watch(started)
    finally:
        spark.stop()
    for printer in printers.values():
        if summary := printer.summary():
            console.print(summary, highlight=False)


def _started(
    spark: SparkSession,
    settings: Settings,
    query: QueryDef,
    options: RunOptions,
    printer: BatchPrinter,
) -> Watched:
    """`query` started on `spark` with its own checkpoint, as `run <command>` starts it."""
    [started] = start_queries(spark, settings, [query], options)
    return Watched(started, printer.line)


def _after_first_batches(started: list[Watched], timeout_s: float = 300.0) -> None:
    """Wait until every query in `started` has run its first batch (or `timeout_s` passed).

    Each stateful query starts Python workers in its first batch, even an empty one; several at
    once on a small, busy machine can take longer than Spark waits for a worker to connect back
    (10 s, fixed), which fails the query.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(
        w.query.isActive and w.query.lastProgress is None for w in started
    ):
        time.sleep(0.5)


def register(app: typer.Typer) -> None:
    """Add `pipeline` to the `run` group, which `run_cmd` registers on `app`."""
    del app
    run_app.command("pipeline")(pipeline)
