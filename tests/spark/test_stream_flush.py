"""A stream and its final flush: over any split into micro-batches, the stream's pairs are the
batch join's without flush, and with `flush_stream`'s the batch join's with flush, for every kind
of time column (each has an explicit example with disorder, ties and pairs pending at the end;
the drawn ones take any kind)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark import complement_join, flush_stream
from statestream.testing import blocks_of_five
from statestream.testing.spark import (
    MemorySink,
    observation_frame,
    observation_stream,
    pair_records,
)
from tests.spark.stream_support import (
    BASE_MS,
    DISORDERED,
    TIME_COLUMNS,
    TimeColumn,
    as_counter,
    cuts,
    records,
    split,
)

pytestmark = pytest.mark.integration

SPEC = JoinSpec("L", "R", "out", function="product")


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(column=TIME_COLUMNS[0], records=DISORDERED, cuts=[3, 7, 14], disorder=2.0, tolerance=3.0)
@example(column=TIME_COLUMNS[1], records=DISORDERED, cuts=[5, 5], disorder=2.0, tolerance=None)
@example(column=TIME_COLUMNS[2], records=DISORDERED, cuts=[12], disorder=1.0, tolerance=3.0)
@given(
    column=st.sampled_from(TIME_COLUMNS),
    records=records,
    cuts=cuts,
    disorder=st.sampled_from([0.0, 2.0]),
    tolerance=st.sampled_from([None, 3.0]),
)
def test_the_stream_is_the_batch_join_without_flush_and_its_final_flush_the_rest(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    column: TimeColumn,
    records: list[tuple],
    cuts: list[int],
    disorder: float,
    tolerance: float | None,
) -> None:
    rows = column.rows(records)
    options = {"order": "offset", "disorder": disorder, "tolerance": tolerance, "buckets": 3}
    options |= column.options
    frame = observation_frame(spark, rows, column.schema)
    certain = complement_join(frame, [SPEC], flush=False, **options).collect()
    whole = complement_join(frame, [SPEC], **options).collect()
    folder = tmp_path_factory.mktemp("flush")
    source = observation_stream(spark, split(rows, cuts), folder / "in", column.schema)
    streamed = MemorySink(folder / "checkpoint").run(complement_join(source, [SPEC], **options))
    assert as_counter(pair_records(streamed)) == as_counter(pair_records(certain))
    flushed = flush_stream(source, [SPEC], folder / "checkpoint", **options).collect()
    assert as_counter(pair_records(streamed + flushed)) == as_counter(pair_records(whole))


def test_the_flush_of_the_worked_example_is_its_four_pending_pairs_per_thing(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [
        (thing, f"{'actSpeed' if side == 'left' else 'vaTorque'}_C1", BASE_MS + int(t), v, k)
        for thing in ("m1", "m2")
        for k, (side, t, v) in enumerate(blocks_of_five(20))
    ]
    source = observation_stream(spark, [rows[:7], rows[7:]], tmp_path / "in")
    stream = complement_join(source, [SpecTemplate()], order="offset")
    streamed = MemorySink(tmp_path / "checkpoint").run(stream)
    flushed = flush_stream(source, [SpecTemplate()], tmp_path / "checkpoint")
    assert flushed.schema == stream.schema  # the stream's columns: one union makes the whole join
    pending = pair_records(flushed.collect())
    assert (len(streamed), len(pending)) == (2 * 23, 2 * 4)  # 27 pairs per thing in all
    assert sorted((p["thing"], p["right"]["phenomenonTime"] - BASE_MS) for p in pending) == [
        (thing, ms) for thing in ("m1", "m2") for ms in (16_000, 17_000, 18_000, 19_000)
    ]
    assert {(p["quantity"], p["left"]["phenomenonTime"] - BASE_MS) for p in pending} == {
        ("vaPower_C1", 14_000)
    }
    with pytest.raises(Exception, match="none of the specs makes"):
        flush_stream(source, [SPEC], tmp_path / "checkpoint").collect()


def test_a_checkpoint_without_a_committed_batch_is_told(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = observation_stream(spark, [], tmp_path / "in")
    with pytest.raises(ConfigError, match="has no committed micro-batch"):
        flush_stream(source, [SPEC], tmp_path / "checkpoint")


def test_a_checkpoint_of_another_stateful_query_is_told(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The join's operator is found in the checkpoint's metadata, not assumed to be operator 0:
    a query whose only state is a dropDuplicates has no join to flush."""
    rows = TIME_COLUMNS[0].rows(DISORDERED)
    source = observation_stream(spark, split(rows, [4]), tmp_path / "in", TIME_COLUMNS[0].schema)
    MemorySink(tmp_path / "checkpoint").run(source.dropDuplicates(["thing", "quantity"]))
    with pytest.raises(ConfigError, match=r"holds no complement_join state \(its operators: \w+\)"):
        flush_stream(source, [SPEC], tmp_path / "checkpoint", order="offset")


def test_a_query_of_two_joins_flushes_the_one_it_is_told(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Two joins in one query keep two states: flush_stream asks which (`operator=`), and each
    flushes its own join's pending pairs."""
    rows = [
        ("m1", f"{'actSpeed' if side == 'left' else 'vaTorque'}_C1", BASE_MS + int(t), v, k)
        for k, (side, t, v) in enumerate(blocks_of_five(20))
    ]
    specs = {
        "power": [SpecTemplate()],
        "product": [JoinSpec("actSpeed_C1", "vaTorque_C1", "torqueSpeed_C1", function="product")],
    }
    source = observation_stream(spark, [rows[:7], rows[7:]], tmp_path / "in")
    power, product = (complement_join(source, s, order="offset") for s in specs.values())
    streamed = MemorySink(tmp_path / "checkpoint").run(power.unionByName(product))
    assert len(streamed) == 2 * 23
    with pytest.raises(ConfigError, match=r"the state of 2 complement_join queries") as told:
        flush_stream(source, specs["power"], tmp_path / "checkpoint")
    operators = [int(n) for n in re.findall(r"\d+", str(told.value).split("(operators ")[1])]
    assert len(operators) == 2
    both = [*specs["power"], *specs["product"]]
    flushed = {
        operator: pair_records(
            flush_stream(source, both, tmp_path / "checkpoint", operator=operator).collect()
        )
        for operator in operators
    }
    quantities = [{p["quantity"] for p in pairs} for pairs in flushed.values()]
    assert sorted(map(sorted, quantities)) == [["torqueSpeed_C1"], ["vaPower_C1"]]
    assert [len(pairs) for pairs in flushed.values()] == [4, 4]
