"""`statestream run stats`: the operation statistics query (added to the `run` group)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import settings_from
from statestream.cli._queries import Watched, run_watched
from statestream.cli.run_cmd import (
    AvailableNow,
    MaxOffsetsPerTrigger,
    PauseAfterCommit,
    StartingOffsets,
    checkpoint_option,
    job_options,
    run_app,
    starting_option,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from statestream.config import Settings
    from statestream.queries.stats.job import StatsJobOptions


def stats(
    ctx: typer.Context,
    available_now: AvailableNow = False,
    max_offsets_per_trigger: MaxOffsetsPerTrigger = None,
    starting: Annotated[StartingOffsets, starting_option("machine.out")] = StartingOffsets.earliest,
    checkpoint: Annotated[Path | None, checkpoint_option("stats")] = None,
    pause_after_commit: PauseAfterCommit = 0.0,
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
    from statestream.queries.stats.job import (
        QUERY_NAME,
        StatsJobOptions,
        check_checkpoint_windows,
        stats_spec,
    )

    settings = settings_from(ctx)
    options = job_options(
        StatsJobOptions,
        available_now,
        max_offsets_per_trigger,
        starting,
        checkpoint,
        pause_after_commit,
    )
    # a checkpoint with other window lengths: one line now, not after Spark has started
    check_checkpoint_windows(
        checkpoint or settings.checkpoint_root / QUERY_NAME, stats_spec(settings)
    )
    run_watched(
        settings, "statestream-stats", lambda spark: [watched_stats(spark, settings, options)]
    )


def watched_stats(spark: SparkSession, settings: Settings, options: StatsJobOptions) -> Watched:
    """The statistics query started on `spark`, with the line printed for each of its batches."""
    from statestream.queries.stats import QUERY
    from statestream.queries.stats.job import start_stats_query

    query = start_stats_query(spark, settings, options)
    return Watched(query, QUERY.batch_line)


def register(app: typer.Typer) -> None:
    """Add `stats` to the `run` group, which `run_cmd` registers on `app`."""
    run_app.command("stats")(stats)
