"""Where a bench ran: the Spark master, the local cluster's workers, the cores its tasks had.

Records/s per core divides a run's records/s by the cores that ran its tasks: a local master's
threads (`local[4]`; `local[*]` is every core of the machine), or the local standalone cluster's
workers × `services.spark_worker_cores`. On this 2-core machine the driver, Kafka and the
benchmark's own producer share the cores too, so per-core figures here are lower bounds.
"""

from __future__ import annotations

import os
import re

from pyspark.sql import SparkSession

from statestream.config import Settings

_LOCAL_THREADS = re.compile(r"^local(?:\[(?P<threads>\*|\d+)(?:,\d+)?\])?$")


def task_cores(master: str, settings: Settings) -> int | None:
    """The cores that run the tasks of a session on `master` (None: another machine's cluster).

    >>> task_cores("local[*,4]", settings)   # on a 2-core machine
    2
    """
    local = _LOCAL_THREADS.match(master)
    if local is not None:
        threads = local.group("threads") or "1"
        return os.cpu_count() or 1 if threads == "*" else int(threads)
    services = settings.services
    if services.spark_workers and master == services.spark_master_url:
        return services.spark_workers * services.spark_worker_cores
    return None


def spark_figures(spark: SparkSession, settings: Settings) -> dict[str, object]:
    """The master, the local cluster's workers (0: no local cluster) and the tasks' cores."""
    master = spark.sparkContext.master
    services = settings.services
    on_local_cluster = services.spark_workers > 0 and master == services.spark_master_url
    return {
        "spark_master": master,
        "spark_workers": services.spark_workers if on_local_cluster else 0,
        "spark_worker_cores": services.spark_worker_cores if on_local_cluster else None,
        "task_cores": task_cores(master, settings),
    }


def per_core(figures: dict) -> int | None:
    """The run's records/s per task core (None when the cores are not known)."""
    cores = figures.get("task_cores")
    return round(figures["records_per_s"] / cores) if cores else None
