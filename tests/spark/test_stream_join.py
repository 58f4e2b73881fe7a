"""The streaming join of a DataFrame: over any split into micro-batches, the batch join's pairs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark import complement_join, flush_stream, write_exactly_once
from statestream.testing import blocks_of_five
from statestream.testing.spark import (
    MemorySink,
    observation_frame,
    observation_stream,
    pair_records,
)
from tests.spark.stream_support import (
    BASE_MS,
)

pytestmark = pytest.mark.integration

SPEC = JoinSpec("L", "R", "out", function="product")


def test_a_restarted_stream_continues_and_rejects_come_with_reasons(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [
        ("m1", "actSpeed_C1", BASE_MS + int(t), v, k)
        if side == "left"
        else ("m1", "vaTorque_C1", BASE_MS + int(t), v, k)
        for k, (side, t, v) in enumerate(blocks_of_five(20))
    ]
    rows += [("m1", "actSpeed_C1", BASE_MS, 1.0, 20), ("m1", "vaTorque_C1", None, 1.0, 21)]
    first, second = observation_stream(spark, [rows[:7]], tmp_path / "in"), None
    pairs = MemorySink(tmp_path / "pairs").run(
        complement_join(first, [SpecTemplate()], order="offset")
    )
    second = observation_stream(spark, [rows[:7], rows[7:]], tmp_path / "in")
    found, rejected = complement_join(second, [SpecTemplate()], order="offset", rejected=True)
    pairs += MemorySink(tmp_path / "pairs").run(found)
    assert len(pairs) == 23  # the worked example without flush, over a restart
    assert {p["quantity"] for p in pair_records(pairs)} == {"vaPower_C1"}
    reasons = sorted(r.reason for r in MemorySink(tmp_path / "rejected").run(rejected))
    assert reasons == [
        f"late: below its series' watermark {BASE_MS + 14_000} ms (join vaPower_C1)",
        "missing phenomenonTime",
    ]
    # a stream with rejects flushes like one without: the worked example's 27 pairs in all
    flushed = flush_stream(second, [SpecTemplate()], tmp_path / "pairs", order="offset")
    assert len(flushed.collect()) == 4


def test_a_stream_needs_the_rocksdb_state_store(spark: SparkSession, tmp_path: Path) -> None:
    key = "spark.sql.streaming.stateStore.providerClass"
    kept = spark.conf.get(key)
    stream = observation_stream(spark, [], tmp_path / "in")
    spark.conf.set(
        key, "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    )
    try:
        with pytest.raises(ConfigError, match="needs the RocksDB state store"):
            complement_join(stream, [SPEC])
    finally:
        spark.conf.set(key, kept)


def test_write_exactly_once_takes_only_a_stream(spark: SparkSession, tmp_path: Path) -> None:
    batch = observation_frame(spark, [("m1", "L", BASE_MS, 1.0, 0)])
    with pytest.raises(ConfigError, match="writes a streaming DataFrame"):
        write_exactly_once(batch, "t", checkpoint=tmp_path, query_name="q")
