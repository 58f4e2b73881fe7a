"""Everything statestream changes inside PySpark, in one place, behind one switch.

- `python_daemon`: Spark's Python workers forked by a daemon that first takes pyspark's zip
  archives off their import path (`spark.python.daemon.module`);
- `python_launcher`: every Python process Spark starts (the driver's at a query's start too)
  started by a script that takes the archives off the path first (`PYSPARK_PYTHON`);
- `grouped_rows`: transformWithStateInPandas input grouped a batch at a time, installed by that
  daemon (only on PySpark 4.1.x, whose row-at-a-time path it replaces);
- `map_state_calls`: a join call's MapState reads and writes sent to the state server in
  windows, not each after the last one's answer, installed by that daemon (only on 4.1.x);
- `freed_memory`: Spark's Python workers keep the memory they free for their next batch
  (glibc's malloc thresholds), installed by that daemon before it forks them;
- `local_fs`: a local master's checkpoints written through `jvm/local-fs` (driver class path);
- `bucket_labels` (`statestream.spark.bucket_labels`, not a patch: a state-key contract): the
  jobs' bucket labels, spread evenly by Spark's own hash partitioning; checked here.

The switch is the setting `spark.patches` (`STATESTREAM_SPARK__PATCHES=false`): off, Spark runs
this Python itself, its own `pyspark.daemon`, PySpark's own grouping and state calls and
Hadoop's local file system. The bucket labels stay, as they are the keys of the jobs' state.
Each patch checks the PySpark version it was written for; when one turns itself off,
`spark_conf` (for the launcher, `python_executable`) logs one warning line that says which and
why, once per process:

    statestream: patch grouped_rows off: written for pyspark 4.1.x, found 4.2.0

Importing this package imports neither pyspark nor the patches: the worker daemon runs before
pyspark may be imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from statestream.config import Settings

SWITCHED = (
    "python_daemon",
    "python_launcher",
    "grouped_rows",
    "map_state_calls",
    "freed_memory",
    "local_fs",
)  # the patches `spark.patches` turns off


def spark_conf(settings: Settings, *, new_driver: bool = False) -> dict[str, str]:
    """The Spark options that install the patches that apply to `settings` and this PySpark.

    `new_driver`: the driver's JVM is launched by this session (not under spark-submit), so the
    local master's checkpoints can go through `jvm/local-fs`. Each patch that is off is logged
    once as a warning (see the module's documentation).
    """
    from statestream.spark import bucket_labels
    from statestream.spark.patches import (
        freed_memory,
        grouped_rows,
        local_fs,
        map_state_calls,
        python_daemon,
    )
    from statestream.spark.patches._checks import warn_once

    labels_unchecked = bucket_labels.applies()
    if labels_unchecked is not None:
        warn_once(
            f"statestream: patch bucket_labels unchecked: {labels_unchecked}; labels kept "
            "(they are state keys), their spread over the shuffle partitions may be uneven"
        )
    if not settings.spark.patches:
        warn_once(f"statestream: patches {', '.join(SWITCHED)} off: spark.patches is false")
        return {}
    conf: dict[str, str] = {}
    off: dict[str, str | None] = {}
    off["python_daemon"] = python_daemon.applies()
    if off["python_daemon"] is None:
        conf |= python_daemon.spark_conf()
        off["grouped_rows"] = grouped_rows.applies()
        off["map_state_calls"] = map_state_calls.applies()
        off["freed_memory"] = freed_memory.applies()
    else:
        off["grouped_rows"] = "it is installed by the python_daemon patch, which is off"
        off["map_state_calls"] = off["grouped_rows"]
        off["freed_memory"] = off["grouped_rows"]
    if new_driver and local_fs.for_this_session(settings):
        off["local_fs"] = local_fs.applies(settings)
        if off["local_fs"] is None:
            conf |= local_fs.spark_conf(settings)
    for name, reason in off.items():
        if reason is not None:
            warn_once(f"statestream: patch {name} off: {reason}")
    return conf


def python_executable(settings: Settings) -> str:
    """What Spark should run as Python (`PYSPARK_PYTHON`) for a driver this session launches:
    the `python_launcher` patch's script where it applies, else this Python. An off patch is
    logged once as a warning, as in `spark_conf`."""
    import sys

    from statestream.spark.patches import python_launcher
    from statestream.spark.patches._checks import warn_once

    if not settings.spark.patches:
        return sys.executable
    reason = python_launcher.applies()
    if reason is not None:
        warn_once(f"statestream: patch python_launcher off: {reason}")
        return sys.executable
    return str(python_launcher.script_path())
