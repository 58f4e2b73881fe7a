"""Spark's Python workers can import statestream: checked on the driver before a join runs.

PySpark starts its workers as `<python> -m <module>`, `<python>` being what `PYSPARK_PYTHON`
said when the SparkContext was created (`python3` from the PATH without it; under spark-submit,
`spark.pyspark.python` sets that variable). A script run as `.venv/bin/python job.py`, the
virtual environment not activated, thus gets workers of another Python, which cannot import
statestream: the task fails in the worker with a `ModuleNotFoundError` that says nothing of the
cause. `check_worker_python` says it, and what to do, before the first task.

Only a local master is checked (a cluster's executors have a Python of their own, which the
driver cannot run), and nothing on Spark Connect (the server starts the workers).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from statestream.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_DEFAULT_PYTHON = "python3"  # PySpark's SparkContext without PYSPARK_PYTHON
_PROBE_TIMEOUT_S = 60.0


def check_worker_python(spark: SparkSession) -> None:
    """Raise `ConfigError` when `spark` has a local master whose Python workers cannot import
    statestream (an interpreter other than this one, checked once per executable).

        >>> check_worker_python(spark)  # before the first task of a join   # doctest: +SKIP
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return
    context = spark.sparkContext
    if not str(context.master).startswith("local"):
        return
    executable = str(getattr(context, "pythonExec", None) or _DEFAULT_PYTHON)
    problem = _import_problem(executable, os.environ.get("PATH", ""))
    if problem is not None:
        raise ConfigError(_message(executable, problem))


def _message(executable: str, problem: str) -> str:
    this = sys.executable
    return (
        f"Spark's Python workers cannot import statestream: this SparkContext starts them with "
        f"{executable!r}, not with this Python ({this}): {problem}. Give the workers "
        f"this Python before the session is created: os.environ['PYSPARK_PYTHON'] = sys.executable "
        f"in the script, or `export PYSPARK_PYTHON={this}`, or activate the virtual environment "
        f"before running the script (under spark-submit: --conf spark.pyspark.python={this}). "
        "A running SparkContext keeps its Python: stop the session and create it anew."
    )


@functools.cache
def _import_problem(executable: str, path: str) -> str | None:
    """Why `executable` (looked up on `path`) cannot import statestream, or None when it can
    (or is this Python). It runs this module as Spark runs its workers' (`-m`), which the
    `python_launcher` patch's script takes too."""
    found = shutil.which(executable, path=path)
    if found is None:
        return f"{executable!r} is not found on the PATH"
    if os.path.abspath(found) == os.path.abspath(sys.executable):
        return None
    try:
        done = subprocess.run(
            [found, "-m", __name__],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None  # not known to fail: let Spark try
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    said = lines[-1] if lines else f"exit code {done.returncode}"
    return f"`{found} -m {__name__}` fails: {said}"


if __name__ == "__main__":  # the probe: importing statestream got this far
    sys.exit(0)
