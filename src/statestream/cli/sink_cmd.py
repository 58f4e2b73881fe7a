"""`statestream run sink-influx`: the topics into InfluxDB (added to the `run` group)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.cli._queries import Watched, watch
from statestream.cli.run_cmd import StartingOffsets, run_app


def sink_influx(
    ctx: typer.Context,
    available_now: Annotated[
        bool,
        typer.Option("--available-now", help="Write what is in the topics now, then stop."),
    ] = False,
    starting: Annotated[
        StartingOffsets,
        typer.Option("--from", help="Where a new query starts reading the topics."),
    ] = StartingOffsets.earliest,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint", help="Checkpoint folder (default: sink_influx in the checkpoint root)."
        ),
    ] = None,
    max_offsets_per_trigger: Annotated[
        int | None,
        typer.Option(
            "--max-offsets-per-trigger",
            min=1,
            help="Records per micro-batch (default: influx_sink.max_offsets_per_trigger).",
        ),
    ] = None,
) -> None:
    """Write machine.data, machine.out, the statistics, alert and vehicle-cell topics to InfluxDB.

    Reads the five topics (read_committed) and writes measurements machine_data, machine_out,
    machine_stats, machine_alerts and vehicle_cells to the database of the settings (created if
    missing), in requests of influx_sink.points_per_request points. A point is its measurement, tags
    and time, so writing a batch again doubles nothing. The Spark tasks write the points, each its
    own partition. While InfluxDB is down the current batch waits and retries with backoff (a
    warning per attempt) and the query does not move on; it continues when InfluxDB is back. Records
    that cannot be points go to the dead-letter topic with the reason, exactly once. Without
    --available-now it runs until stopped; Ctrl-C stops it cleanly (a batch that waits for InfluxDB
    is written again on the next start).
    """
    from statestream.jobs.session import spark_session
    from statestream.queries.sink_influx.job import (
        InfluxSinkOptions,
        SinkTotals,
        check_sink_topics,
        sink_streams,
        start_influx_sink_query,
    )

    settings = settings_from(ctx)
    check_sink_topics(settings)  # before Spark starts: a missing topic is a one-line error
    options = InfluxSinkOptions(
        available_now=available_now,
        starting_offsets=starting.value,
        checkpoint=checkpoint,
        max_offsets_per_trigger=max_offsets_per_trigger,
    )
    spark = spark_session(settings, app_name="statestream-sink-influx")
    totals = SinkTotals()
    try:
        query = start_influx_sink_query(spark, settings, options)
        console.print(
            f"query [bold]{query.name}[/]: {', '.join(sink_streams(settings))} → InfluxDB "
            f"{settings.influx.url} database {settings.influx.database}; Ctrl-C stops it",
            highlight=False,
        )
        watch([Watched(query, totals.line)])
    finally:
        spark.stop()
    console.print(totals.summary(), highlight=False)


def register(app: typer.Typer) -> None:
    """Add `sink-influx` to the `run` group, which `run_cmd` registers on `app`."""
    run_app.command("sink-influx")(sink_influx)
