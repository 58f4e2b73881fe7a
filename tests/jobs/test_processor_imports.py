"""What Spark's driver imports at a query's start to unpickle a join processor.

At each query's first batch the driver starts a Python process of its own that unpickles the
stateful processor only to read its state schemas: the processors and what they hold must not
pull in the compiled engine (numba), pandas or pyarrow, which made that start ~0.4 s (the
pipeline's join) and ~1 s (`complement_join` on a stream) longer. Nor does importing the
public Spark API itself.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = {"numba", "pandas", "pyarrow", "statestream.join.router", "statestream.join.things"}

PIPELINE = """
from statestream.queries.join import OutputTopics
from statestream.queries.join.processor import ComplementJoinProcessor
from statestream.join.spec import SpecTemplate
processor = ComplementJoinProcessor(
    [SpecTemplate("speed", "torque", "power")], OutputTopics("out", "late", "dead", "in")
)
"""
STREAM = """
from statestream.join.spec import JoinSpec
from statestream.spark._stream_processor import StreamBucketJoin
processor = StreamBucketJoin([JoinSpec("speed", "torque", "power")], {"to_ms": 1000.0})
"""


def _modules_after_unpickling(build: str) -> set[str]:
    """The modules a fresh interpreter holds after unpickling the processor `build` makes, as
    the driver's process does (it imports pyspark's streaming first)."""
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{build}\nimport pickle, sys\nsys.stdout.buffer.write(pickle.dumps(processor))",
        ],
        check=True,
        capture_output=True,
    ).stdout
    script = (
        "import pickle, sys\n"
        "import pyspark.sql.streaming.transform_with_state_driver_worker\n"
        "pickle.loads(sys.stdin.buffer.read())\n"
    )
    return _modules_after(script, made)


def _modules_after(script: str, stdin: bytes = b"") -> set[str]:
    """The modules a fresh interpreter holds after running `script`."""
    script += "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], input=stdin, check=True, capture_output=True
    ).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("build", [PIPELINE, STREAM], ids=["pipeline join", "stream join"])
def test_a_processor_unpickles_without_the_engine_pandas_or_pyarrow(build: str) -> None:
    loaded = _modules_after_unpickling(build)
    assert "statestream.join.spec" in loaded  # the specs came back
    assert not HEAVY & loaded


def test_the_public_spark_api_imports_without_the_engine() -> None:
    """A PySpark driver that plans joins (`statestream.spark`) does not load the compiled
    engine: the router is imported where a bucket is joined, in the executors' workers."""
    loaded = _modules_after(
        "from statestream.spark import complement_join, flush_stream, observations, "
        "write_exactly_once"
    )
    assert "statestream.spark.batch_join" in loaded and "statestream.spark.stream_flush" in loaded
    assert not {"numba", "statestream.join.router", "statestream.join.things"} & loaded
