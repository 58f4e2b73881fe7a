"""`statestream run stats`: the operation statistics query (added to the `run` group)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statestream.cli._common import console, settings_from
from statestream.cli.run_cmd import StartingOffsets, run_app
from statestream.errors import StatestreamError


def stats(
    ctx: typer.Context,
    available_now: Annotated[
        bool,
        typer.Option("--available-now", help="Process what is in the topic, then stop."),
    ] = False,
    max_offsets_per_trigger: Annotated[
        int | None,
        typer.Option("--max-offsets-per-trigger", min=1, help="Cap on records per micro-batch."),
    ] = None,
    starting: Annotated[
        StartingOffsets,
        typer.Option("--from", help="Where a new query starts reading machine.out."),
    ] = StartingOffsets.earliest,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint", help="Checkpoint folder (default: stats in the checkpoint root)."
        ),
    ] = None,
    pause_after_commit: Annotated[
        float, typer.Option("--pause-after-commit", hidden=True, help="Crash tests only.")
    ] = 0.0,
) -> None:
    """Power levels and duty cycle per thing and component, in event-time windows, exactly once.

    Reads the joined power series from machine.out and writes, per thing and component, the
    seconds spent in each power level (0–20 … 80–100 % of the rated power) per tumbling window
    and the duty cycle (share of time at ≥ 80 %) per sliding window to analytics.machine.stats,
    and an alert to analytics.machine.alerts when a duty cycle exceeds its limit (settings
    section `stats`). A window is written when the series' watermark passes its end and again
    when late data within the allowed lateness refines it; later records go to the late topic.
    Without --available-now it runs until stopped; Ctrl-C stops it cleanly.
    """
    from pyspark.errors import StreamingQueryException

    from statestream.jobs.session import spark_session
    from statestream.jobs.stats_job import (
        QUERY_NAME,
        StatsJobOptions,
        batch_metrics,
        check_checkpoint_windows,
        start_stats_query,
        stats_spec,
    )

    settings = settings_from(ctx)
    options = StatsJobOptions(
        available_now=available_now,
        max_offsets_per_trigger=max_offsets_per_trigger,
        starting_offsets=starting.value,
        checkpoint=checkpoint,
        pause_after_commit_s=pause_after_commit,
    )
    # a checkpoint with other window lengths: one line now, not after Spark has started
    check_checkpoint_windows(
        checkpoint or settings.checkpoint_root / QUERY_NAME, stats_spec(settings)
    )
    spark = spark_session(settings, app_name="statestream-stats")
    query = start_stats_query(spark, settings, options)
    console.print(f"query [bold]{query.name}[/] started; Ctrl-C stops it")
    seen = -1
    try:
        finished = False
        while not finished:
            finished = query.awaitTermination(1.0)
            for progress in query.recentProgress:
                if progress["batchId"] > seen:
                    seen = progress["batchId"]
                    console.print(
                        _metrics_line(batch_metrics(progress)), highlight=False, soft_wrap=True
                    )
    except KeyboardInterrupt:
        console.print("stopping …")
        query.stop()
    except StreamingQueryException as exc:
        raise StatestreamError(f"query {query.name} failed: {exc.desc.splitlines()[0]}") from None
    finally:
        spark.stop()
    console.print(f"query {query.name} stopped")


def _metrics_line(m: dict) -> str:
    lag = f"{m['event_time_lag_s']:.1f} s" if m["event_time_lag_s"] is not None else "–"
    return (
        f"batch {m['batch']}: {m['records_in']:,} in, {m['windows_out']:,} windows, "
        f"{m['alerts']:,} alerts, late {m['late']:,}, malformed {m['malformed']:,}, "
        f"other quantities {m['other_quantities']:,}, state {m['state_windows']:,} windows, "
        f"{m['duration_s']:.2f} s, event-time lag {lag}"
    )


def register(app: typer.Typer) -> None:
    """Add `stats` to the `run` group, which `run_cmd` registers on `app`."""
    run_app.command("stats")(stats)
