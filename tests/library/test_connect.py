"""`complement_join`, `flush_stream`, `asof_join` and `flush_asof` on a Spark Connect session
(`SparkSession.builder.remote`), batch and streaming (PySpark 4.1 on: 4.0's Connect client
cannot run a streaming join, which then says so), checked against the engine run directly and
against `pandas.merge_asof`.

A local Connect server is a SparkContext of its own, which cannot share a process with a
classic session: the main suite (one SparkSession a run) skips these tests, and the library
matrix runs them in a pytest process of their own, with `STATESTREAM_CONNECT_TESTS=1` and
pyspark's `connect` extra (grpcio, grpcio-status, googleapis-common-protos, zstandard).
The server listens on Spark Connect's default port, 15002.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

import numpy as np
import pyspark
import pytest
from pyspark.sql import DataFrame, SparkSession

from statestream.errors import ConfigError
from statestream.join import JoinRouter, JoinSpec, SpecTemplate
from statestream.spark import asof_join, complement_join, flush_asof, flush_stream, observations
from statestream.testing.spark import observation_frame, observation_stream
from tests.library.asof_support import (
    expected,
    found,
    run_to_end,
    sides,
    stream_of,
    write_chunks,
)

CONNECT_TESTS = "STATESTREAM_CONNECT_TESTS"  # "1": run them (a process of their own)
PYSPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

pytestmark = pytest.mark.skipif(
    os.environ.get(CONNECT_TESTS) != "1",
    reason="runs in the library matrix (scripts/test_library.sh), its own process",
)

BASE_MS = 1_700_000_000_000
SPEC = JoinSpec("L", "R", "out", function="product", disorder=2.0)
# two things, disorder within 2 s, ties, an irrelevant quantity, a duplicate, a late record
# and pairs still pending at the end: (thing, quantity, quarter seconds, value)
RECORDS = [
    ("m1", "L", 0, 1),
    ("m1", "L", 4, 2),
    ("m2", "R", 8, 1),
    ("m1", "R", 6, 3),
    ("m1", "R", 6, 1),
    ("m1", "L", 2, 0),
    ("m2", "L", 4, 2),
    ("m1", "X", 5, 1),
    ("m1", "L", 12, 3),
    ("m2", "R", 16, 2),
    ("m1", "R", 10, 2),
    ("m1", "R", 10, 2),
    ("m2", "L", 24, 0),
    ("m1", "L", 1, 5),
    ("m2", "R", 20, 1),
    ("m1", "R", 30, 4),
]
ROWS = [(t, q, BASE_MS + 250 * s, float(v), k) for k, (t, q, s, v) in enumerate(RECORDS)]


@pytest.fixture(scope="module")
def connect() -> Iterator[SparkSession]:
    """A Spark Connect session on a local server started for this module, stopped after it."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.fail(
            "a classic SparkContext runs in this process: run tests/library/test_connect.py "
            f"in a pytest process of its own, with {CONNECT_TESTS}=1"
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the server's workers: this venv
    session = (
        SparkSession.builder.remote("local[2]")
        .appName("statestream-connect-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        .getOrCreate()
    )
    assert type(session).__module__.startswith("pyspark.sql.connect")
    yield session
    session.stop()


def collected(rows: Iterable) -> Counter:
    """Pair rows as a multiset of (thing, quantity, time, result, left, right)."""

    def side(record) -> tuple:
        return (record.quantity, float(record.phenomenonTime), record.result)

    return Counter(
        (r.thing, r.quantity, float(r.phenomenonTime), r.result, side(r.left), side(r.right))
        for r in rows
    )


def engine_pairs(specs: list[JoinSpec], rows: list[tuple], flush: bool) -> Counter:
    """What `JoinRouter` emits for `rows` (thing, quantity, time, value, …) in list order."""
    router = JoinRouter(specs)
    things, quantities, t, v = (np.asarray(column) for column in list(zip(*rows, strict=True))[:4])
    steps = [router.process(things.astype(object), quantities.astype(object), t, v)]
    if flush:
        steps.append(router.finish())
    found: Counter = Counter()
    for step in steps:
        for spec, pair_things, p in step.pairs_by_spec():
            for k in range(len(p)):
                left = (spec.left, float(p.left_t[k]), float(p.left_v[k]))
                right = (spec.right, float(p.right_t[k]), float(p.right_v[k]))
                pair = (pair_things[k], spec.result, float(p.time[k]), float(p.result[k]))
                found[(*pair, left, right)] += 1
    return found


def sample(spark: SparkSession, folder: Path) -> tuple[DataFrame, list[tuple]]:
    """The bundled sample's wide rows with their line numbers (arrival order), and its narrow
    records in the order the join takes them: by line, a line's quantities by name (the order
    of `spark.read.json`'s columns, in which `observations` lists them)."""
    text = resources.files("statestream.data").joinpath("machine_events.jsonl").read_text()
    lines = [json.loads(line) | {"line": n} for n, line in enumerate(text.splitlines(), 1)]
    path = folder / "sample.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    records = [
        (line["Thing"], name, line["Timestamp"], float(line[name]), line["line"])
        for line in lines
        for name in sorted(line)
        if name not in ("Thing", "Timestamp", "id", "line") and line[name] is not None
    ]
    return spark.read.json(str(path)), records


def test_the_batch_join_on_connect_is_the_engines(connect: SparkSession, tmp_path: Path) -> None:
    frame = observation_frame(connect, ROWS)
    pairs, rejected = complement_join(frame, [SPEC], order="offset", rejected=True)
    expected = engine_pairs([SPEC], ROWS, flush=True)
    assert sum(expected.values()) > 5
    assert collected(pairs.collect()) == expected
    assert sorted(r.reason.split(":")[0] for r in rejected.collect()) == ["duplicate", "late"]
    given = complement_join(frame, [SPEC], order="offset", buckets=3, flush=False)
    assert collected(given.collect()) == engine_pairs([SPEC], ROWS, flush=False)

    wide, records = sample(connect, tmp_path)
    narrow = observations(wide, keep=["line"])
    found = collected(complement_join(narrow, [SpecTemplate()], order="line").collect())
    specs = SpecTemplate().specs_for(sorted({r[1] for r in records}))
    assert sum(found.values()) > 1000
    assert found == engine_pairs(specs, records, flush=True)


def test_a_stream_on_connect_and_its_flush_are_the_batch_join(
    connect: SparkSession, tmp_path: Path
) -> None:
    batches = [ROWS[:5], [], ROWS[5:11], ROWS[11:]]
    stream = observation_stream(connect, batches, tmp_path / "input")
    if PYSPARK < (4, 1):  # 4.0's Connect client has no transformWithStateInPandas
        with pytest.raises(ConfigError, match=r"Spark Connect session needs PySpark 4\.1"):
            complement_join(stream, [SPEC], order="offset")
        return
    checkpoint = tmp_path / "checkpoint"
    pairs = complement_join(stream, [SPEC], order="offset")
    streamed = collected(run_to_end(pairs, checkpoint, f"pairs_{uuid.uuid4().hex[:8]}", connect))
    assert streamed == engine_pairs([SPEC], ROWS, flush=False)
    rest = collected(flush_stream(stream, [SPEC], checkpoint, order="offset").collect())
    assert sum(rest.values()) > 0
    assert streamed + rest == engine_pairs([SPEC], ROWS, flush=True)


def test_asof_join_on_connect_in_batch_is_merge_asof(connect: SparkSession) -> None:
    left, right = sides(seed=21, rows=120)
    joined = asof_join(
        connect.createDataFrame(left), connect.createDataFrame(right), on="t", by="k",
        direction="nearest", tolerance=3,
    )  # fmt: skip
    assert found(joined.select("lid", "rid").collect()) == expected(left, right, "nearest", 3, True)


def test_asof_join_of_two_streams_on_connect_and_its_flush_are_merge_asof(
    connect: SparkSession, tmp_path: Path
) -> None:
    left, right = sides(seed=22, rows=80)
    streams = []
    for name, frame in (("left", left), ("right", right)):
        ordered = frame.sort_values(["t", f"{name[0]}id"], kind="stable").reset_index(drop=True)
        ordered["offset"] = np.arange(len(ordered), dtype=np.int64)
        write_chunks(ordered, tmp_path / name, np.array([20, 50]))
        streams.append(stream_of(connect, tmp_path / name, connect.createDataFrame(ordered)))
    options = {"on": "t", "by": "k", "order": "offset"}
    if PYSPARK < (4, 1):  # 4.0's Connect client has no transformWithStateInPandas
        with pytest.raises(ConfigError, match=r"Spark Connect session needs PySpark 4\.1"):
            asof_join(*streams, **options)
        return
    checkpoint = tmp_path / "checkpoint"
    joined = asof_join(*streams, **options).select("lid", "rid")
    emitted = run_to_end(joined, checkpoint, f"asof_{uuid.uuid4().hex[:8]}", connect)
    rest = flush_asof(*streams, checkpoint, **options).select("lid", "rid").collect()
    in_order = right.sort_values(["t", "rid"], kind="stable")
    assert found(emitted + rest) == expected(left, in_order, "backward", None, True)


def test_a_stream_asof_joined_to_a_static_table_on_connect_is_merge_asof(
    connect: SparkSession, tmp_path: Path
) -> None:
    """A streaming left side with a static right side: each left row matched at once, no state
    and no flush (a stream-static join), the same rows as `pandas.merge_asof`."""
    left, right = sides(seed=23, rows=100)
    write_chunks(left, tmp_path / "left", np.array([30, 70]))
    stream = stream_of(connect, tmp_path / "left", connect.createDataFrame(left))
    joined = asof_join(stream, connect.createDataFrame(right), on="t", by="k", direction="forward")
    name = f"asof_static_{uuid.uuid4().hex[:8]}"
    emitted = run_to_end(joined.select("lid", "rid"), tmp_path / "checkpoint", name, connect)
    assert found(emitted) == expected(left, right, "forward", None, True)
