"""The batch join of a DataFrame: the engine's pairs, whatever the partitioning and time type."""

from __future__ import annotations

import io
import json
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import SchemaError
from statestream.join import JoinRouter, JoinSpec, SpecTemplate
from statestream.offline_join import join_lines
from statestream.spark import complement_join, observations
from statestream.testing import blocks_of_five
from statestream.testing.spark import OBSERVATIONS, observation_frame
from tests.library.asof_support import session_conf

pytestmark = pytest.mark.integration

SCHEMA = OBSERVATIONS  # thing, quantity, phenomenonTime (ms), result, offset
BASE_MS = 1_700_000_000_000
SPEC = JoinSpec("L", "R", "out", function="product")


frame = observation_frame


def collected(pairs: DataFrame, time_to_ms: float = 1.0) -> Counter:
    """The pairs as a multiset of (thing, quantity, time ms, result, left, right)."""
    rows = pairs.collect()

    def side(record) -> tuple:
        return (record.quantity, record.phenomenonTime * time_to_ms, record.result)

    return Counter(
        (r.thing, r.quantity, r.phenomenonTime * time_to_ms, r.result, side(r.left), side(r.right))
        for r in rows
    )


def engine_pairs(specs: list[JoinSpec], rows: list[tuple], flush: bool) -> Counter:
    """What `JoinRouter` emits for `rows` in list order (arrival order), as `collected` has it."""
    router = JoinRouter(specs)
    columns = list(zip(*rows, strict=True))[:4] if rows else [[]] * 4
    things, quantities, t, v = (np.asarray(c) for c in columns)
    steps = [router.process(things.astype(object), quantities.astype(object), t, v)]
    if flush:
        steps.append(router.finish())
    found: Counter = Counter()
    for step in steps:
        for spec, pair_things, p in step.pairs_by_spec():
            for k in range(len(p)):
                found[
                    (
                        pair_things[k],
                        spec.result,
                        float(p.time[k]),
                        float(p.result[k]),
                        (spec.left, float(p.left_t[k]), float(p.left_v[k])),
                        (spec.right, float(p.right_t[k]), float(p.right_v[k])),
                    )
                ] += 1
    return found


records = st.lists(
    st.tuples(
        st.sampled_from(["m1", "m2"]),
        st.sampled_from(["L", "R", "X"]),
        st.integers(0, 12),  # seconds: ties are common
        st.integers(0, 3),  # values: duplicates are common
    ),
    max_size=40,
)


@settings(max_examples=30, deadline=None)
@given(
    records=records,
    disorder=st.sampled_from([0.0, 2.0]),
    tolerance=st.sampled_from([None, 0.0, 3.0]),
    flush=st.booleans(),
)
def test_the_batch_join_is_the_engines(
    spark: SparkSession,
    records: list[tuple],
    disorder: float,
    tolerance: float | None,
    flush: bool,
) -> None:
    rows = [
        (thing, q, BASE_MS + 1000 * s, float(v), offset)
        for offset, (thing, q, s, v) in enumerate(records)
    ]
    df = frame(spark, rows)
    pairs = complement_join(
        df, [SPEC], order="offset", disorder=disorder, tolerance=tolerance, flush=flush, buckets=3
    )
    spec = JoinSpec("L", "R", "out", function="product", disorder=disorder, tolerance=tolerance)
    assert collected(pairs) == engine_pairs([spec], rows, flush)


def test_without_an_order_records_arrive_in_time_order(spark: SparkSession) -> None:
    times = [5, 1, 4, 2, 3, 0, 7, 6]
    rows = [
        ("m1", "L" if k % 2 else "R", BASE_MS + 1000 * s, float(k), k) for k, s in enumerate(times)
    ]
    in_time_order = sorted(rows, key=lambda r: r[2])
    assert collected(complement_join(frame(spark, rows), [SPEC])) == engine_pairs(
        [SPEC], in_time_order, True
    )


def test_the_worked_examples(spark: SparkSession) -> None:
    rows = [
        (thing, "L" if side == "left" else "R", BASE_MS + int(t), v, k)
        for thing in ("m1", "m2", "m3")
        for k, (side, t, v) in enumerate(blocks_of_five(20))
    ]
    df = frame(spark, rows)
    assert complement_join(df, [SPEC], flush=False, order="offset").count() == 3 * 23
    assert complement_join(df, [SPEC], order="offset", buckets=1).count() == 3 * 27
    assert complement_join(df, [SPEC], tolerance=3.0).count() == 3 * 15


def test_adaptive_execution_coalesces_the_default_partitions_not_given_buckets(
    spark: SparkSession,
) -> None:
    rows = [(f"m{k % 7}", "LR"[k % 2], BASE_MS + 1000 * k, float(k % 5), k) for k in range(80)]
    df = frame(spark, rows)
    shuffled = {"spark.sql.shuffle.partitions": "40", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    with session_conf(spark, shuffled):  # no one-task plan: the shuffle's partitions
        default = complement_join(df, [SPEC], order="offset")
        given = complement_join(df, [SPEC], order="offset", buckets=40)
        assert "Exchange" in plan_of(default)
        assert collected(default) == collected(given) == engine_pairs([SPEC], rows, True)
        assert default.rdd.getNumPartitions() < 40  # several buckets in a partition
        assert given.rdd.getNumPartitions() == 40


def test_a_small_input_joins_in_one_task_without_a_shuffle(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [(f"m{k % 7}", "LR"[k % 2], BASE_MS + 1000 * k, float(k % 5), k) for k in range(80)]
    frame(spark, rows).write.parquet(str(tmp_path / "rows"))
    df = spark.read.parquet(str(tmp_path / "rows"))  # a file: Spark estimates its size
    with session_conf(spark, {"spark.sql.shuffle.partitions": "40"}):
        small = complement_join(df, [SPEC], order="offset")
        plan = plan_of(small)
        assert "MapInArrow" in plan and "Coalesce 1" in plan and "Exchange" not in plan
        assert small.rdd.getNumPartitions() == 1
        assert collected(small) == engine_pairs([SPEC], rows, True)


def plan_of(df: DataFrame) -> str:
    """The physical plan Spark would run (classic session)."""
    return str(df._jdf.queryExecution().executedPlan().toString())


def test_epoch_ms_seconds_and_timestamps_give_the_same_pairs(spark: SparkSession) -> None:
    rows = [
        (thing, "L" if side == "left" else "R", BASE_MS + int(t), v, k)
        for thing in ("m1", "m2")
        for k, (side, t, v) in enumerate(blocks_of_five(40))
    ]
    ms = frame(spark, rows)
    seconds = ms.withColumn("phenomenonTime", F.col("phenomenonTime") / 1000.0)
    micros = (F.col("phenomenonTime") * 1e6).cast("long")
    stamps = seconds.withColumn("phenomenonTime", F.timestamp_micros(micros))
    options = {"tolerance": 3.0, "disorder": 2.0}
    expected = collected(complement_join(ms, [SPEC], **options))
    assert sum(expected.values()) > 40
    assert collected(complement_join(seconds, [SPEC], time_unit="s", **options), 1000.0) == expected
    from_stamps = complement_join(stamps, [SPEC], **options)
    assert dict(from_stamps.dtypes)["phenomenonTime"] == "timestamp"
    as_ms = from_stamps.select(
        "thing",
        "quantity",
        (F.unix_micros("phenomenonTime") / 1000).alias("phenomenonTime"),
        "result",
        *(
            F.struct(
                F.col(f"{side}.quantity").alias("quantity"),
                (F.unix_micros(f"{side}.phenomenonTime") / 1000).alias("phenomenonTime"),
                F.col(f"{side}.result").alias("result"),
            ).alias(side)
            for side in ("left", "right")
        ),
    )
    assert collected(as_ms) == expected


def sample_wide(spark: SparkSession, folder: Path) -> DataFrame:
    """The bundled sample's wide rows, each with its line number (file order is arrival order)."""
    text = resources.files("statestream.data").joinpath("machine_events.jsonl").read_text()
    path = folder / "sample.jsonl"
    path.write_text(
        "".join(
            json.dumps(json.loads(line) | {"line": n}) + "\n"
            for n, line in enumerate(text.splitlines(), 1)
        )
    )
    return spark.read.json(str(path))


@pytest.mark.parametrize("disorder", [0.0, 120.0])
def test_the_sample_gives_the_offline_joins_pairs(
    spark: SparkSession, disorder: float, tmp_path: Path
) -> None:
    narrow = observations(sample_wide(spark, tmp_path), keep=["line"])
    pairs, rejected = complement_join(
        narrow, [SpecTemplate()], order="line", disorder=disorder, rejected=True
    )
    spec = JoinSpec("actSpeed_C11", "vaTorque_C11", "vaPower_C11", disorder=disorder)
    out, late = io.StringIO(), io.StringIO()
    data = resources.files("statestream.data").joinpath("machine_events.jsonl").read_bytes()
    summary = join_lines(io.BytesIO(data), [spec], out, lambda: late)
    offline = Counter(
        (
            p["thing"],
            p["quantity"],
            p["phenomenonTime"],
            p["result"],
            *(
                (p[s]["quantity"], p[s]["phenomenonTime"], p[s]["result"])
                for s in ("left", "right")
            ),
        )
        for p in map(json.loads, out.getvalue().splitlines())
    )
    batch = collected(pairs)
    assert summary.pairs > 1000
    assert batch.keys() == offline.keys() and sum(batch.values()) == summary.pairs
    reasons = Counter(r.reason.split(":")[0] for r in rejected.collect())
    assert reasons == {"late": summary.late}


def test_rejected_rows_come_back_with_their_reasons(spark: SparkSession) -> None:
    rows = [
        ("m1", "L", BASE_MS, 1.0, 0),
        ("m1", "R", BASE_MS + 1000, 2.0, 1),
        ("m1", "L", BASE_MS + 2000, 3.0, 2),
        ("m1", "L", BASE_MS + 2000, 3.0, 3),  # duplicate
        ("m1", "L", BASE_MS + 500, 4.0, 4),  # late
        ("m1", "R", BASE_MS + 3000, 0.0, 5),  # ratio cannot take 0 on the right
        (None, "L", BASE_MS, 1.0, 6),
        ("m1", None, BASE_MS, 1.0, 7),
        ("m1", "L", None, 1.0, 8),
        ("m1", "L", BASE_MS + 4000, None, 9),
        ("m1", "R", BASE_MS + 4000, float("nan"), 10),
        ("m1", "L", BASE_MS + 4000, 1.0, None),
        ("m1", "X", None, None, 11),  # in no spec: not joined, not rejected
    ]
    spec = JoinSpec("L", "R", "out", function="ratio")
    pairs, rejected = complement_join(frame(spark, rows), [spec], order="offset", rejected=True)
    reasons = {r.offset: r.reason for r in rejected.collect()}
    assert reasons == {
        3: "duplicate: same time and value as an accepted record (join out)",
        4: f"late: below its series' watermark {BASE_MS + 2000} ms (join out)",
        5: "value of R cannot be taken by ratio (join out)",
        6: "missing thing",
        7: "missing quantity",
        8: "missing phenomenonTime",
        9: "missing result",
        10: "value of R is not a number: NaN",
        None: "missing offset",
    }
    assert dict(rejected.dtypes) == dict(frame(spark, rows).dtypes) | {"reason": "string"}
    assert pairs.count() == 2
    for found in (pairs, rejected):  # both read the join's output from the cache: it ran once
        assert "InMemoryRelation" in found._jdf.queryExecution().withCachedData().toString()
    spark.catalog.clearCache()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"thing": "machine"}, "column 'machine' (the thing) is not in the DataFrame"),
        ({"order": "kafka_offset"}, "column 'kafka_offset' (the order) is not in the DataFrame"),
        ({"value": "thing"}, "column 'thing' (the value) is string; it must be a number"),
        ({"quantity": "offset"}, "column 'offset' (the quantity) is bigint; it must be a string"),
        ({"time": "thing"}, "column 'thing' (the time) is string"),
        ({"time_unit": "minutes"}, "time_unit must be one of ms, s"),
    ],
)
def test_a_bad_column_is_named(spark: SparkSession, options: dict, message: str) -> None:
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        complement_join(frame(spark, []), [SPEC], **options)


def test_observations_skip_what_a_row_did_not_measure(spark: SparkSession) -> None:
    wide = spark.createDataFrame(
        [("m1", 1000, 1.0, None, "a"), ("m1", 2000, None, 2, "b")],
        "Thing string, Timestamp long, speed double, torque int, id string",
    )
    rows = observations(wide).orderBy("phenomenonTime").collect()
    assert [tuple(r) for r in rows] == [("m1", "speed", 1000, 1.0), ("m1", "torque", 2000, 2.0)]
    assert observations(wide, quantities=["torque"]).count() == 1
    with pytest.raises(SchemaError, match="'id' \\(a quantity\\) is string"):
        observations(wide, quantities=["id"])
