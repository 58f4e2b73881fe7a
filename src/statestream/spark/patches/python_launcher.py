"""Spark's Python processes started with pyspark's zip archives off their import path.

Spark starts each Python process as `<PYSPARK_PYTHON> -m <module>`, with pyspark.zip and py4j's
zip first on its path. Nothing compiled is cached for a module imported from a zip, so every
such process compiles the pyspark modules it imports anew, the one the driver starts at each
transformWithState query's first batch included (`transform_with_state_driver_worker`, which
runs the processor's `init` for the state schemas), on the query's critical path.

This patch makes `PYSPARK_PYTHON` the console script `statestream-spark-python` (beside the
Python running statestream), which takes the archives off the path when the same pyspark and
py4j are importable without them (`drop_archives_from_path`) and then runs the
module as `python -m` would. The executors' worker daemon does the same for its own workers.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from pathlib import Path

NAME = "python_launcher"
SCRIPT = "statestream-spark-python"  # [project.scripts] in pyproject.toml
WRITTEN_FOR = "4."  # Spark's PythonWorkerFactory runs `<pythonExec> -m <module>`
ARCHIVES = (".zip", ".jar")


def script_path() -> Path:
    """The console script, in the folder of the Python that runs statestream."""
    return Path(sys.executable).with_name(SCRIPT)


def applies() -> str | None:
    """None when this PySpark starts its Python processes as the launcher expects and the
    launcher is installed beside this Python; else why not."""
    from statestream.spark.patches._checks import unsupported

    reason = unsupported(WRITTEN_FOR)
    if reason is None and not os.access(script_path(), os.X_OK):
        reason = f"{script_path()} is not installed (pip install -e . installs it)"
    return reason


def drop_archives_from_path() -> bool:
    """Take the archives off `sys.path` if pyspark and py4j are found without them."""
    kept = [entry for entry in sys.path if not entry.endswith(ARCHIVES)]
    if kept == sys.path:
        return False
    original = sys.path[:]
    sys.path[:] = kept
    if all(importlib.util.find_spec(name) is not None for name in ("pyspark", "py4j")):
        for archive in set(original) - set(kept):
            sys.path_importer_cache.pop(archive, None)
        return True
    sys.path[:] = original
    return False


def main(argv: list[str] | None = None) -> None:
    """`statestream-spark-python -m MODULE [ARG ...]`: run MODULE with the archives off the path.

    Like `python -m`, the current folder comes first on the path (instead of the script's).
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] != "-m":
        raise SystemExit(f"usage: {SCRIPT} -m MODULE [ARG ...] (how Spark starts Python)")
    # the module itself is imported first by runpy (`python_daemon` imports nothing of it):
    # imported here before, runpy would warn that it was found in sys.modules
    if sys.path and Path(sys.path[0]) == script_path().parent:
        sys.path[0] = os.getcwd()
    drop_archives_from_path()
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
