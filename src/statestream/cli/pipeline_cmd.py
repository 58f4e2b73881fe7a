"""`statestream run pipeline`: join, statistics and InfluxDB sink in one Spark application."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.cli._queries import Watched, watch
from statestream.cli.run_cmd import StartingOffsets, run_app, watched_join

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

    from statestream.config import Settings

    Starter = Callable[[SparkSession, Settings, str, bool], Watched | list[Watched]]


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
    vehicles: Annotated[
        bool,
        typer.Option(
            "--vehicles/--no-vehicles",
            help="Also run the vehicle use case's queries (those of run geo: H3 cells, bunching).",
        ),
    ] = False,
) -> None:
    """The join, the operation statistics and the InfluxDB sink as one Spark application.

    The queries share one SparkSession (so the whole pipeline fits a small machine) and each
    keeps its own checkpoint in the checkpoint root: join, stats and sink_influx, the same ones
    `run join`, `run stats` and `run sink-influx` use (with --vehicles also those of `run geo`),
    so you can switch between the two ways of running them. Each batch prints one line, prefixed
    with its query. Without --available-now the queries run side by side until stopped, each
    started once the one before has run its first batch; Ctrl-C stops them all cleanly.
    """
    from statestream.jobs.session import spark_session

    settings = settings_from(ctx)
    spark = spark_session(settings, app_name="statestream-pipeline")
    starters: list[Starter] = [_join]
    starters += [_stats] if stats else []
    starters += [_sink] if sink else []
    starters += [_vehicles] if vehicles else []
    try:
        if available_now:
            for start in starters:  # each query reads what the one before it wrote
                watch(_listed(start(spark, settings, starting.value, True)))
        else:
            queries: list[Watched] = []
            for start in starters:  # one after the other's first batch (see below)
                _after_first_batches(queries)
                queries += _listed(start(spark, settings, starting.value, False))
            names = ", ".join(w.query.name for w in queries)
            console.print(f"queries {names} started; Ctrl-C stops them")
            watch(queries)
    finally:
        spark.stop()


def _join(spark: SparkSession, settings: Settings, starting: str, available_now: bool) -> Watched:
    from statestream.jobs.join_job import JoinJobOptions

    options = JoinJobOptions(available_now=available_now, starting_offsets=starting)
    return watched_join(spark, settings, options)


def _stats(spark: SparkSession, settings: Settings, starting: str, available_now: bool) -> Watched:
    from statestream.cli.stats_cmd import watched_stats
    from statestream.jobs.stats_job import StatsJobOptions

    options = StatsJobOptions(available_now=available_now, starting_offsets=starting)
    return watched_stats(spark, settings, options)


def _sink(spark: SparkSession, settings: Settings, starting: str, available_now: bool) -> Watched:
    from statestream.cli.sink_cmd import SinkTotals
    from statestream.jobs.influx_sink_job import InfluxSinkOptions, start_influx_sink_query

    options = InfluxSinkOptions(available_now=available_now, starting_offsets=starting)
    query = start_influx_sink_query(spark, settings, options)
    return Watched(query, SinkTotals().line)


def _vehicles(
    spark: SparkSession, settings: Settings, starting: str, available_now: bool
) -> list[Watched]:
    from statestream.jobs.geo_job import GeoJobOptions
    from statestream.jobs.geo_queries import start_vehicle_queries

    options = GeoJobOptions(available_now=available_now, starting_offsets=starting)
    started = start_vehicle_queries(spark, settings, options)
    return [Watched(query, line) for query, line in started]


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


def _listed(started: Watched | list[Watched]) -> list[Watched]:
    return started if isinstance(started, list) else [started]


def register(app: typer.Typer) -> None:
    """Add `pipeline` to the `run` group, which `run_cmd` registers on `app`."""
    del app
    run_app.command("pipeline")(pipeline)
