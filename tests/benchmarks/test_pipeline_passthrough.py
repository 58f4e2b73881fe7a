"""The pass-through beside `bench pipeline`'s join: its figures, its ratio, its check, how the
results page shows them, and (with Spark) that its packed rows are the input records unchanged."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from benchmarks.bench_output import result_record
from benchmarks.pipeline_passthrough import (
    Fingerprint,
    checked,
    join_to_passthrough,
    packed_unchanged,
    passthrough_figures,
)
from benchmarks.results_page import ratios, results_markdown, throughputs

from statestream.exactly_once.packed_rows import records


def _batch(rows: int, ms: int) -> dict:
    return {"numInputRows": rows, "durationMs": {"triggerExecution": ms}}


def test_the_pass_through_is_timed_as_the_join_and_the_join_is_a_fraction_of_it() -> None:
    progress = [_batch(500_000, 4_000), _batch(500_000, 1_000), _batch(1_000_000, 2_000)]
    figures = passthrough_figures(2_000_000, 8.004, progress, join_records_per_s=100_000)
    assert figures == {
        "passthrough_records": 2_000_000,
        "passthrough_seconds": 8.0,
        "passthrough_batches": 3,
        "passthrough_records_per_s": 249_875,  # over the whole wall time, as the join's
        "passthrough_sustained_records_per_s": 500_000,  # after the first batch
        "join_to_passthrough": 0.4,
    }


def test_a_pass_through_of_one_batch_has_no_rate_after_it() -> None:
    figures = passthrough_figures(20_000, 2.0, [_batch(20_000, 1_900)], join_records_per_s=4_000)
    assert figures["passthrough_sustained_records_per_s"] is None
    assert figures["join_to_passthrough"] == 0.4


def test_the_ratio_is_the_joins_share_to_three_places() -> None:
    assert join_to_passthrough(150_000, 400_000) == 0.375
    assert join_to_passthrough(200_000, 300_000) == 0.667
    assert join_to_passthrough(300_000, 200_000) == 1.5  # a slower pass-through shows, too
    assert join_to_passthrough(150_000, 0) is None


def test_the_output_is_checked_against_the_input_by_count_and_hashes() -> None:
    read = Fingerprint(records=2_000, hash_sum=-123_456_789)
    assert checked(read, read) == {"passthrough_records_out": 2_000, "passthrough_unchanged": True}
    missing = checked(Fingerprint(1_999, -123_000_000), read)
    assert missing == {"passthrough_records_out": 1_999, "passthrough_unchanged": False}
    changed = checked(Fingerprint(2_000, -123_456_788), read)  # a key or a value differs
    assert changed["passthrough_unchanged"] is False


def _pipeline_run(join: int, passthrough: int) -> dict:
    progress = [_batch(passthrough * 2, 2_000), _batch(passthrough, 1_000)]
    figures = passthrough_figures(passthrough * 3, 3.0, progress, join)
    return {"records_per_s": join, **figures, **checked(Fingerprint(3, 9), Fingerprint(3, 9))}


def test_the_results_file_carries_the_figures_and_the_page_plots_the_pass_through(
    tmp_path: Path,
) -> None:
    runs = [_pipeline_run(200_000, 500_000), _pipeline_run(210_000, 525_000)]
    lines = [json.dumps(result_record("pipeline", figures)) for figures in runs]
    (tmp_path / "pipeline.jsonl").write_text("\n".join(lines) + "\n")
    figures = json.loads(lines[-1])["figures"]
    assert figures["passthrough_records_per_s"] == 525_000
    assert figures["join_to_passthrough"] == 0.4 and figures["passthrough_unchanged"] is True
    assert set(throughputs(figures)) == {
        "records_per_s",
        "passthrough_records_per_s",
        "passthrough_sustained_records_per_s",
    }
    assert ratios(figures) == {"join_to_passthrough": 0.4}
    page = results_markdown(tmp_path)
    assert "passthrough_records_per_s" in page  # a series of the throughput plot's legend
    assert "| passthrough records/s |" in page and "| join to passthrough |" in page
    assert "| 525,000 |" in page and "| 0.4 |" in page


@pytest.mark.integration
def test_the_packed_rows_are_the_input_records_unchanged(spark) -> None:
    """The sink's packed rows, unpacked by the Python reference and by the sink's own JVM code,
    give back each record's key and value as they were: a null key and non-ASCII included."""
    rows = [
        (b"R0815-0001.actSpeed_C11", b'{"thing": "R0815-0001", "result": 1.5}'),
        (None, b'{"thing": "no key"}'),
        ("Maschine-\u00e4\u00f6.vaTorque_C11".encode(), '{"thing": "\u00e4 \\" ,1]"}'.encode()),
    ]
    frame = spark.createDataFrame(rows, "key binary, value binary")
    packed = packed_unchanged(frame, "bench.out").collect()
    want = [("bench.out", None if key is None else key.decode(), value) for key, value in rows]
    got = [record for row in packed for record in records(row["topic"], row["keys"], row["values"])]
    assert got == want
    assert all(row["kind"] == "record" and row["count"] == 1 for row in packed)
    sink = spark.sparkContext._jvm.io.statestream.kafka.ExactlyOnceKafkaSink
    unpacked = [
        json.loads(sink.unpackedRecords(row["keys"], bytes(row["values"])))[0] for row in packed
    ]
    assert [(key, base64.b64decode(value)) for key, value in unpacked] == [
        (key, value) for _, key, value in want
    ]
