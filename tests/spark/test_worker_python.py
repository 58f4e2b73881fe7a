"""A script run with the venv's Python, the venv not activated: the join says why its workers
would fail, before any task (`statestream.spark.worker_python`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
from pyspark.sql import SparkSession
from statestream.join import JoinSpec
from statestream.spark import complement_join
from statestream.testing.spark import observation_frame

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .getOrCreate()
)
rows = [("m1", "L", 0, 2.0, 0), ("m1", "R", 1000, 3.0, 1)]
complement_join(observation_frame(spark, rows), [JoinSpec("L", "R", "out")]).collect()
"""


def test_a_worker_python_without_statestream_is_a_config_error(tmp_path: Path) -> None:
    # `python3` on the PATH: this Python's base interpreter, as outside the venv (no site of it)
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(Path(sys.executable).resolve())
    venv_bin = str(Path(sys.executable).parent)
    path = [str(bare), *(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYTHONPATH")}
    env |= {"PATH": os.pathsep.join(path)}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("statestream.errors.ConfigError: Spark's Python workers cannot import")
    assert "starts them with 'python3'" in last and "No module named 'statestream'" in last
    assert f"PYSPARK_PYTHON={sys.executable}" in last
    assert "Py4JJavaError" not in done.stderr  # no task ran
