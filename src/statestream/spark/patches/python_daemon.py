"""Spark's Python worker daemon, started with the zip archives off the import path.

Spark puts pyspark.zip, py4j's zip and spark-core's jar first on its Python workers' path. Each
task starts with `importlib.invalidate_caches()`, and on Python 3.11 every zip importer then
re-reads its whole archive's directory, in every task: a small micro-batch's stateful task
spends a large part of its time there. When the same pyspark and py4j can be imported without
them (from site-packages), this module (`spark.python.daemon.module`) drops the archives from
the path and then runs Spark's own daemon, whose workers it forks.

Before that it installs the `grouped_rows` patch, which hands transformWithStateInPandas
processors their rows grouped a batch at a time instead of a row at a time, the
`map_state_calls` patch, which lets the join's state reads and writes go in windows, and the
`freed_memory` patch, which keeps the memory a batch frees for the next; the forked workers
inherit all three.

Last, it imports what every worker imports (numpy, pandas, pyarrow, pyspark's worker and its
stateful serializers, and the join engine with its compiled loops, which a join worker would
otherwise load on its first call) and freezes those objects (`gc.freeze`, as Python's
documentation advises before forking): a worker's full collections then walk the objects of its
own calls, not the ~75 k of these modules, so the many full collections of a join worker
cost far less CPU. `statestream.python_daemon`, the name this module had, still starts it.
"""

from __future__ import annotations

import gc
import importlib
import runpy

from statestream.spark.patches.python_launcher import drop_archives_from_path

NAME = "python_daemon"
MODULE = "statestream.spark.patches.python_daemon"
WRITTEN_FOR = "4."  # pyspark.daemon, started as `python -m <spark.python.daemon.module>`


def applies() -> str | None:
    """None when the driver's PySpark is one this daemon was written for, else why not."""
    from statestream.spark.patches._checks import unsupported

    return unsupported(WRITTEN_FOR)


def spark_conf() -> dict[str, str]:
    """Spark's Python workers forked by this daemon instead of Spark's own."""
    return {"spark.python.daemon.module": MODULE}


PRELOADED = (
    "numpy",
    "pandas",
    "pyarrow",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.streaming.stateful_processor_api_client",
    "statestream.join.router",  # the join engine: numba and its compiled loops, slow to load
)


def freeze_preloaded() -> int:
    """Import what every worker imports, then move all objects so far out of the collector's
    reach (`gc.freeze`): the forked workers' full collections no longer walk the ~75 k objects
    of these modules. Returns how many objects were frozen."""
    for name in PRELOADED:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def main() -> None:
    """Run Spark's daemon with the archives off the path, the grouped rows, map state calls and
    freed memory installed and the preloaded modules frozen.

    The grouped rows and the map state calls install themselves only on the PySpark they were
    written for, the freed memory only with glibc; the driver has said so in its log when they
    do not (`statestream.spark.patches.spark_conf`).
    """
    drop_archives_from_path()
    from statestream.spark.patches import freed_memory, grouped_rows, map_state_calls

    grouped_rows.install()
    map_state_calls.install()
    freed_memory.install()
    freeze_preloaded()
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
