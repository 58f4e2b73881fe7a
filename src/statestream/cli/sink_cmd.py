"""`statestream run sink-influx`: the four topics into InfluxDB (added to the `run` group)."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.cli.run_cmd import StartingOffsets, run_app
from statestream.errors import StatestreamError

if TYPE_CHECKING:
    from statestream.jobs.influx_sink_job import SinkBatchReport

_STATESTREAM_ERROR = re.compile(r"statestream\.errors\.\w+: (.+)")


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
    """Write machine.data, machine.out and the statistics and alert topics to InfluxDB.

    Reads the four topics (read_committed) and writes measurements machine_data, machine_out,
    machine_stats and machine_alerts to the database of the settings (created if missing), in
    requests of influx_sink.points_per_request points. A point is its measurement, tags and time,
    so writing a batch again doubles nothing. While InfluxDB is down the current batch waits and
    retries with backoff (a warning per attempt) and the query does not move on; it continues
    when InfluxDB is back. Records that cannot be points go to the dead-letter topic with the
    reason. Without --available-now it runs until stopped; Ctrl-C stops it cleanly.
    """
    from pyspark.errors import StreamingQueryException

    from statestream.jobs.influx_sink_job import (
        InfluxSinkOptions,
        check_sink_topics,
        sink_streams,
        start_influx_sink_query,
    )
    from statestream.jobs.session import spark_session

    settings = settings_from(ctx)
    check_sink_topics(settings)  # before Spark starts: a missing topic is a one-line error
    totals = _Totals()
    options = InfluxSinkOptions(
        available_now=available_now,
        starting_offsets=starting.value,
        checkpoint=checkpoint,
        max_offsets_per_trigger=max_offsets_per_trigger,
        on_batch=totals.add,
    )
    spark = spark_session(settings, app_name="statestream-sink-influx")
    stop = _StopOnCtrlC(options.stop_waiting)
    try:
        query = start_influx_sink_query(spark, settings, options)
        console.print(
            f"query [bold]{query.name}[/]: {', '.join(sink_streams(settings))} → InfluxDB "
            f"{settings.influx.url} database {settings.influx.database}; Ctrl-C stops it",
            highlight=False,
        )
        while not query.awaitTermination(1.0):
            if stop.requested.is_set():
                console.print("stopping …")
                query.stop()
    except StreamingQueryException as exc:
        if not stop.requested.is_set():
            raise StatestreamError(f"query sink_influx failed: {_reason(exc.desc)}") from None
        console.print("the batch that waited for InfluxDB is written on the next start")
    finally:
        stop.restore()
        spark.stop()
    console.print(totals.summary(), highlight=False)


class _StopOnCtrlC:
    """Ctrl-C asks the query to stop, and a batch waiting for InfluxDB to give up (uncommitted).

    PySpark's own SIGINT handler calls into the JVM from inside the main thread's py4j call and
    breaks it; this one only sets flags, which the main loop checks between two waits.
    """

    def __init__(self, stop_waiting: threading.Event) -> None:
        self.requested = threading.Event()
        self.stop_waiting = stop_waiting
        self._previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.requested.set()
        self.stop_waiting.set()

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._previous)


class _Totals:
    """Prints each batch's line and adds up the figures for the summary."""

    def __init__(self) -> None:
        self.batches = self.records = self.points = self.bad = 0

    def add(self, report: SinkBatchReport) -> None:
        console.print(report.line(), highlight=False, soft_wrap=True)
        self.batches += 1
        self.records += report.records
        self.points += report.points
        self.bad += report.bad_records + report.refused_points

    def summary(self) -> str:
        return (
            f"query sink_influx stopped: {self.batches:,} batches, {self.records:,} records, "
            f"{self.points:,} points written, {self.bad:,} dead-lettered"
        )


def _reason(description: str) -> str:
    """The statestream error inside a failed query's description, else its first line."""
    matches = _STATESTREAM_ERROR.findall(description)
    return matches[-1] if matches else description.strip().splitlines()[0]


def register(app: typer.Typer) -> None:
    """Add `sink-influx` to the `run` group, which `run_cmd` registers on `app`."""
    run_app.command("sink-influx")(sink_influx)
