"""The patches on a PySpark they were not written for (4.0, 4.3): each one that turns itself off
says so in one warning line, once, and a session with those that still apply joins as before.

On PySpark 4.1, where every patch applies, tests/spark/patches checks them: these run in the
library matrix (scripts/test_library.sh), on 4.0 and 4.3.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyspark
import pytest

from statestream.spark import patches
from statestream.spark.patches import _checks, python_daemon, python_launcher

pytestmark = pytest.mark.skipif(
    pyspark.__version__.startswith("4.1."),
    reason="PySpark 4.1 here: every patch applies; the library matrix runs this on 4.0 and 4.3",
)


def _settings() -> Any:
    """What the pipeline's settings give the patches (`statestream.config` is the pipeline's)."""
    return SimpleNamespace(
        spark=SimpleNamespace(patches=True, master="local[1]", extra_conf={}),
        paths=SimpleNamespace(jars_dir=Path("no-jars")),
    )


def _off_lines() -> list[str]:
    found = pyspark.__version__
    return [
        f"statestream: patch {name} off: written for pyspark 4.1.x, found {found}"
        for name in ("grouped_rows", "map_state_calls")
    ]


def test_the_patches_written_for_41_say_once_that_they_are_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = _settings()
    logged = set(_checks._logged)
    _checks._logged.clear()
    try:
        for _ in range(3):  # one session after another: one line each
            conf = patches.spark_conf(settings)
            executable = patches.python_executable(settings)
    finally:
        _checks._logged.clear()
        _checks._logged.update(logged)
    assert conf == {"spark.python.daemon.module": python_daemon.MODULE}  # written for 4.x
    assert executable == str(python_launcher.script_path())
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == _off_lines()


# a session with the patches that apply (the worker daemon, the launcher) joins, in a process
# of its own: the session's Python workers are set when it starts
_JOIN_WITH_THE_PATCHES = """
import os
from pathlib import Path
from types import SimpleNamespace
from pyspark.sql import SparkSession
from statestream.join import JoinSpec
from statestream.spark import complement_join, patches

settings = SimpleNamespace(
    spark=SimpleNamespace(patches=True, master="local[1]", extra_conf={}),
    paths=SimpleNamespace(jars_dir=Path("no-jars")),
)
os.environ["PYSPARK_PYTHON"] = patches.python_executable(settings)
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in patches.spark_conf(settings).items():
    builder = builder.config(key, value)
spark = builder.config("spark.sql.shuffle.partitions", "1").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
rows = [("m1", "L", 0, 2.0), ("m1", "R", 1000, 3.0), ("m1", "L", 2000, 4.0)]
schema = "thing string, quantity string, phenomenonTime long, result double"
df = spark.createDataFrame(rows, schema)
pairs = complement_join(df, [JoinSpec("L", "R", "out", function="product")])
print(sorted(row.result for row in pairs.collect()))
spark.stop()
"""


def test_a_session_with_the_patches_that_apply_joins(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _JOIN_WITH_THE_PATCHES],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[6.0, 12.0]"
    said = [line for line in done.stderr.splitlines() if line.startswith("statestream: ")]
    assert said == _off_lines()
