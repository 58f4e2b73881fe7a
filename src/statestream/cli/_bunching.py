"""The bunching query as the command line runs it: started, and a line per batch.

`statestream run geo` starts it beside the cells query and hands both to `cli._queries.watch`:

    queries = [cells_query(...), bunching_query(spark, settings, available_now=False)]
    watch(queries)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from statestream.cli._queries import Watched

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from statestream.config import Settings


def bunching_query(
    spark: SparkSession,
    settings: Settings,
    *,
    available_now: bool = False,
    starting_offsets: str = "earliest",
    checkpoint: Path | None = None,
) -> Watched:
    """Start the bunching query (checkpoint `bunching` in the checkpoint root by default)."""
    from statestream.jobs.bunching_job import (
        BunchingJobOptions,
        batch_metrics,
        start_bunching_query,
    )

    options = BunchingJobOptions(
        available_now=available_now, starting_offsets=starting_offsets, checkpoint=checkpoint
    )
    query = start_bunching_query(spark, settings, options)
    return Watched(query, lambda progress: bunching_metrics_line(batch_metrics(progress)))


def bunching_metrics_line(m: dict) -> str:
    """The line printed for one batch of the bunching query (see `bunching_job.batch_metrics`)."""
    lag = f"{m['event_time_lag_s']:.1f} s" if m["event_time_lag_s"] is not None else "–"
    return (
        f"batch {m['batch']}: {m['records_in']:,} in, {m['alerts']:,} bunching alerts, "
        f"no fix {m['no_fix']:,}, stale {m['stale']:,}, malformed {m['malformed']:,}, "
        f"state {m['state_vehicles']:,} vehicles, {m['state_episodes']:,} episodes, "
        f"{m['duration_s']:.2f} s, event-time lag {lag}"
    )
