"""The status files, pinned: what the JVM and Python write is what `read_statuses` reads.

A run's `<query>.<run id>.progress` is written by the JVM's listener (`QueryProgressFiles`, in
statestream's jar), its `<query>.<run id>.json` by Python (`QueryStatusListener`); `statestream
status` reads both (`read_statuses`). `golden/status/` holds one run's pair: the `.progress` file
as the JVM writes it for the Spark progress report `golden/spark_progress.json` and the sums
below, and the `.json` file as Python writes it. A change of either writer, or of the reader,
fails a test here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.jobs.status import STOPPED, QueryStatus, QueryStatusListener, read_statuses

GOLDEN = Path(__file__).parent / "golden"
RUN_ID = "9c1e4a7b-2d85-4f36-b0a9-e7d3c5f18a24"
STATUS_FILE = GOLDEN / "status" / f"join.{RUN_ID}.json"
PROGRESS_FILE = GOLDEN / "status" / f"join.{RUN_ID}.progress"
# the run's sums after its three batches, as `QueryProgressFiles` keeps them
INPUT_ROWS = 2100
METRIC_SUMS = (
    '{"records_in":2100,"pairs_out":1500,"late":4,"duplicates":0,"malformed":1,'
    '"state_records":30,"max_event_time_ms":5.3877E12}'
)


def _golden_status() -> QueryStatus:
    """The status the golden `.json` file holds: a stopped run of `join`, its process gone."""
    return QueryStatus(
        name="join",
        run_id=RUN_ID,
        pid=4194000,
        process_start="175028",
        state=STOPPED,
        started=1795899272.0625,
        updated=1795899280.6875,
    )


def test_python_writes_the_golden_status_file(tmp_path: Path) -> None:
    QueryStatusListener(tmp_path)._write(_golden_status())
    assert (tmp_path / STATUS_FILE.name).read_bytes() == STATUS_FILE.read_bytes()


def test_status_reads_the_golden_status_and_progress_files() -> None:
    [status] = read_statuses(STATUS_FILE.parent, include_finished=True)
    assert (status.name, status.run_id, status.state) == ("join", RUN_ID, STOPPED)
    assert status.started == 1795899272.0625 and status.error is None
    assert (status.batch, status.input_rows, status.duration_s) == (7, 700, 0.512)
    assert (status.input_rows_per_s, status.processed_rows_per_s) == (350.0, 1367.2)
    assert (status.state_rows, status.state_bytes) == (12, 4096)
    assert status.watermark == "2026-11-28T20:50:00.000Z"
    assert status.metrics["pairs_out"] == 500
    assert status.metrics["max_event_time_ms"] == 1.7959e12
    assert status.totals == {
        "input_rows": 2100,
        "duplicates": 0,
        "late": 4,
        "malformed": 1,
        "pairs_out": 1500,
        "records_in": 2100,
    }


@pytest.mark.integration
def test_the_jvm_writes_the_golden_progress_file(spark) -> None:
    files = spark.sparkContext._jvm.io.statestream.status.QueryProgressFiles
    report = (GOLDEN / "spark_progress.json").read_text(encoding="utf-8").strip()
    content = files.progressFileContent(report, INPUT_ROWS, METRIC_SUMS)
    assert bytes(content) == PROGRESS_FILE.read_bytes()
