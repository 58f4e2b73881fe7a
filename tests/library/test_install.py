"""What `pip install statestream` (no extra) gives: the library imports none of the pipeline's
libraries, and the command line says in one line that it needs the pipeline extra."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from statestream.__main__ import NEEDS_PYTHON_311, NEEDS_THE_EXTRA

# the pipeline's libraries (the `pipeline` extra), none of which the library may import
PIPELINE = (
    "confluent_kafka",
    "paho",
    "typer",
    "rich",
    "starlette",
    "uvicorn",
    "h3",
    "requests",
    "pydantic",
    "pydantic_settings",
    "cryptography",
    "orjson",
)

# every public name of the library, then the engine's compiled loops (what the workers load)
_PROBE = """
import json, sys
import statestream.join, statestream.spark, statestream.spark.patches
for name in statestream.spark.__all__:
    if name != "write_exactly_once":  # the pipeline's Kafka writer
        getattr(statestream.spark, name)
for name in statestream.join.__all__:
    getattr(statestream.join, name)
import statestream.join.router, statestream.spark.patches.python_daemon
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_the_library_imports_none_of_the_pipelines_libraries() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    imported = set(json.loads(done.stdout))
    assert {"pyspark", "numpy", "numba", "pandas", "pyarrow"} <= imported
    assert imported.isdisjoint(PIPELINE), sorted(imported & set(PIPELINE))


@pytest.mark.skipif(
    importlib.util.find_spec("typer") is not None,
    reason="the pipeline extra is installed here; the library matrix runs this without it",
)
def test_the_command_line_asks_for_the_pipeline_extra() -> None:
    script = Path(sys.executable).with_name("statestream")  # the console script pip installed
    line = NEEDS_THE_EXTRA if sys.version_info >= (3, 11) else NEEDS_PYTHON_311
    for command in ([str(script), "--help"], [sys.executable, "-m", "statestream"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n")


@pytest.mark.skipif(
    importlib.util.find_spec("pydantic") is not None,
    reason="the pipeline extra is installed here; the library matrix runs this without it",
)
def test_the_kafka_writer_asks_for_the_pipeline_extra() -> None:
    import statestream.spark
    from statestream.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match=r"pip install 'statestream\[pipeline\]'"):
        statestream.spark.write_exactly_once  # noqa: B018 (the attribute's import is the test)
