"""The pandas side of the batch join, without Spark: one bucket's frame in, flat rows out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from statestream.join import JoinSpec
from statestream.spark._bucket_join import OUTPUT_COLUMNS, PAIR_COLUMNS, BucketJoin

SPEC = JoinSpec("L", "R", "out", function="product")


def bucket(rows: list[tuple]) -> pd.DataFrame:
    things, quantities, t, v = zip(*rows, strict=True)
    return pd.DataFrame(
        {"thing": things, "quantity": quantities, "t": t, "v": v, "row": range(len(rows))}
    )


def test_times_come_back_as_given_and_pairs_are_the_mean() -> None:
    frame = bucket([("m1", "L", 0.1, 1.0), ("m1", "R", 0.7, 2.0), ("m2", "L", 0.3, 5.0)])
    out = BucketJoin([SPEC], to_ms=1000.0)(frame)
    assert list(out.columns) == PAIR_COLUMNS  # no rejected records asked: no columns for them
    assert out[["thing", "left_t", "right_t", "result"]].values.tolist() == [["m1", 0.1, 0.7, 2.0]]
    assert out["pair_t"].tolist() == [(0.1 + 0.7) / 2]


def test_arrival_is_time_order_and_rejects_come_with_reasons() -> None:
    frame = bucket([("m1", "L", 2000, 1.0), ("m1", "L", 1000, 3.0), ("m1", "L", 2000, 1.0)])
    out = BucketJoin([SPEC], to_ms=1.0, rejected=True)(frame)
    assert out["kind"].tolist() == ["rejected"]  # no R: no pair; time order: nothing late
    assert out["reason"].tolist() == [
        "duplicate: same time and value as an accepted record (join out)"
    ]
    assert out["t"].dtype == "Int64" and out["t"].tolist() == [2000]


def test_a_bucket_without_pairs_gives_an_empty_frame_of_nullable_columns() -> None:
    out = BucketJoin([SPEC], to_ms=1.0, flush=False, rejected=True)(bucket([("m1", "L", 1, 1.0)]))
    assert len(out) == 0 and list(out.columns) == list(OUTPUT_COLUMNS)
    assert (out.dtypes == np.dtype(object)).all()  # no float NaN columns for strings


def test_the_arrow_output_holds_the_pairs_of_the_frame_output() -> None:
    import pyarrow as pa

    schema = pa.schema(
        [("spec", pa.int32()), ("thing", pa.string()), ("pair_t", pa.float64())]
        + [(name, pa.float64()) for name in ("result", "left_t", "left_v", "right_t", "right_v")]
    )
    frame = bucket([("m1", "L", 0.0, 1.0), ("m1", "R", 5.0, 2.0), ("m2", "L", 3.0, 5.0)])
    join = BucketJoin([SPEC], to_ms=1.0)
    table = join.arrow(pa.Table.from_pandas(frame, preserve_index=False), schema)
    assert table.schema == schema
    assert table.to_pandas().equals(join(frame).astype({"spec": np.int32}))
    alone = pa.Table.from_pandas(bucket([("m2", "L", 3.0, 5.0)]), preserve_index=False)
    assert join.arrow(alone, schema).num_rows == 0
