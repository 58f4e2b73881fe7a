"""grouped_load_stream gives exactly what PySpark's row-at-a-time load_stream gives, but for
binary columns, which stay in Arrow."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pyspark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

from statestream.spark.patches import grouped_rows

ROW_AT_A_TIME = TransformWithStateInPandasSerializer.load_stream
UNLIMITED = 2**31 - 1

SCHEMA = pa.schema(
    [
        ("bucket", pa.int32()),
        ("thing", pa.string()),
        ("value", pa.binary()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("ratio", pa.float32()),
        ("ok", pa.bool_()),
        ("not an identifier", pa.float64()),
    ]
)


def _serializer(max_records: int, max_bytes: int, key_offsets: list[int]):
    serializer = TransformWithStateInPandasSerializer(
        "UTC", False, True, max_records, max_bytes, False
    )
    serializer.key_offsets = key_offsets
    return serializer


def _stream(batches: list[pa.RecordBatch]) -> io.BytesIO:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        for batch in batches:
            writer.write_batch(batch)
    sink.seek(0)
    return sink


def _loaded(load_stream, batches, max_records=100_000, max_bytes=UNLIMITED, key_offsets=(0,)):
    """What the worker gets: (mode, key, [(chunk key, frame), …]) in order."""
    serializer = _serializer(max_records, max_bytes, list(key_offsets))
    return [
        (mode, key, None if chunks is None else list(chunks))
        for mode, key, chunks in load_stream(serializer, _stream(batches))
    ]


def _comparable(key):
    """A key with NaN as a string: NaN != NaN, but both paths must give NaN in the same places."""
    return None if key is None else tuple("NaN" if v != v else v for v in key)


def _assert_same(expected, got) -> None:
    def modes_and_keys(loaded):
        return [(mode, _comparable(key)) for mode, key, _ in loaded]

    assert modes_and_keys(got) == modes_and_keys(expected)
    for (_, key, want), (_, _, have) in zip(expected, got, strict=True):
        if want is None:
            assert have is None
            continue
        assert [_comparable(k) for k, _ in have] == [_comparable(k) for k, _ in want]
        assert [type(v) for k, _ in have for v in k] == [type(v) for k, _ in want for v in k]
        assert len(have) == len(want), key
        for (_, frame), (_, wanted) in zip(have, want, strict=True):
            pd.testing.assert_frame_equal(_as_objects(frame), wanted)


def _as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """The patch's frame with its binary column (Arrow-backed) as Python objects, as the
    row-at-a-time path gives it."""
    assert frame["value"].dtype == pd.ArrowDtype(pa.binary())
    assert [name for name, dtype in frame.dtypes.items() if isinstance(dtype, pd.ArrowDtype)] == [
        "value"
    ]
    return frame.assign(value=frame["value"].to_numpy(dtype=object, na_value=None))


def _batch(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in SCHEMA]
    return pa.record_batch(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, SCHEMA, strict=True)],
        schema=SCHEMA,
    )


def _rows(rng: np.random.Generator, count: int, keys: list) -> list[tuple]:
    """Rows sorted by bucket (as Spark sends them), with nulls here and there."""
    buckets = sorted(rng.choice(keys, size=count).tolist(), key=lambda k: (k is None, k or 0))

    def maybe(value):
        return None if rng.random() < 0.1 else value

    return [
        (
            bucket,
            maybe(f"M{rng.integers(5)}"),
            maybe(bytes(rng.integers(0, 255, size=3).tolist())),
            maybe(int(rng.integers(3))),
            int(i),
            maybe(float(rng.random())),
            maybe(bool(rng.random() < 0.5)),
            maybe(float(rng.integers(4))),
        )
        for i, bucket in enumerate(buckets)
    ]


def _split(rows: list[tuple], cuts: list[int]) -> list[pa.RecordBatch]:
    edges = [0, *sorted({c % (len(rows) + 1) for c in cuts}), len(rows)]
    return [_batch(rows[a:b]) for a, b in itertools.pairwise(edges)]


def test_the_row_at_a_time_path_is_what_the_tests_compare_with() -> None:
    assert pyspark.__version__.startswith(grouped_rows.WRITTEN_FOR)
    assert ROW_AT_A_TIME is not grouped_rows.grouped_load_stream


def test_a_key_continues_across_batches_and_frames_are_bounded() -> None:
    rows = [(3, "a", b"x", 0, i, 0.5, True, 1.0) for i in range(5)]
    rows += [(7, "b", b"y", 1, i, 0.25, False, 2.0) for i in range(5, 8)]
    batches = [_batch(rows[:2]), _batch(rows[2:6]), _batch(rows[6:])]
    got = _loaded(grouped_rows.grouped_load_stream, batches, max_records=3)
    assert [(key, [len(frame) for _, frame in chunks]) for _, key, chunks in got[:2]] == [
        ((3,), [3, 2]),
        ((7,), [3]),
    ]
    assert got[0][2][0][1]["offset"].tolist() == [0, 1, 2]
    assert got[0][2][0][1]["bucket"].dtype == np.int64  # int32 in Arrow, int64 as from rows
    assert got[0][2][0][1].columns[-1] == "_7"  # named as the row tuples name it
    _assert_same(_loaded(ROW_AT_A_TIME, batches, max_records=3), got)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 60),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    max_records=st.integers(1, 12),
    key_set=st.sampled_from([[1, 2, 3], [5], [1, 2, None], [None]]),
    max_bytes=st.sampled_from([UNLIMITED, 40, 200]),
)
def test_the_same_frames_as_the_row_at_a_time_path(
    seed, count, cuts, max_records, key_set, max_bytes
) -> None:
    rows = _rows(np.random.default_rng(seed), count, key_set)
    batches = _split(rows, cuts) if rows else [_batch([])]
    _assert_same(
        _loaded(ROW_AT_A_TIME, batches, max_records, max_bytes),
        _loaded(grouped_rows.grouped_load_stream, batches, max_records, max_bytes),
    )


@pytest.mark.parametrize("key_offsets", [(1,), (0, 3)])
def test_string_and_two_column_keys(key_offsets) -> None:
    rng = np.random.default_rng(5)
    rows = sorted(_rows(rng, 40, [1, 2]), key=lambda r: tuple(str(r[k]) for k in key_offsets))
    batches = _split(rows, [7, 19, 30])
    _assert_same(
        _loaded(ROW_AT_A_TIME, batches, 6, key_offsets=key_offsets),
        _loaded(grouped_rows.grouped_load_stream, batches, 6, key_offsets=key_offsets),
    )


def test_install_replaces_load_stream_of_this_pyspark_only(monkeypatch) -> None:
    monkeypatch.setattr(TransformWithStateInPandasSerializer, "load_stream", ROW_AT_A_TIME)
    monkeypatch.setattr(pyspark, "__version__", "4.2.0")
    assert grouped_rows.install() is False
    assert TransformWithStateInPandasSerializer.load_stream is ROW_AT_A_TIME
    monkeypatch.setattr(pyspark, "__version__", "4.1.3")
    assert grouped_rows.install() is True
    assert TransformWithStateInPandasSerializer.load_stream is grouped_rows.grouped_load_stream
