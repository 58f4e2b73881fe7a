"""Status files: the figures a query reports and how `read_statuses` tells running from gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from statestream.jobs.status import (
    GONE,
    RUNNING,
    QueryStatus,
    QueryStatusListener,
    _process_start,
    read_statuses,
)
from tests.support import free_ports, run_cli

PROGRESS = {
    "batchId": 3,
    "numInputRows": 700,
    "inputRowsPerSecond": 350.0,
    "processedRowsPerSecond": 1400.0,
    "durationMs": {"triggerExecution": 500},
    "eventTime": {"watermark": "2024-01-01T00:00:00.000Z"},
    "stateOperators": [
        {"numRowsTotal": 12, "memoryUsedBytes": 999, "customMetrics": {"rocksdbSstFileSize": 4096}}
    ],
    "observedMetrics": {
        "join_metrics": {"records_in": 700, "pairs_out": 500, "late": 2, "max_event_time_ms": 9}
    },
}


def _status(pid: int) -> QueryStatus:
    return QueryStatus(name="join", run_id=f"run-{pid}", pid=pid, process_start=_process_start(pid))


# the sums `QueryProgressFiles` keeps after two batches of PROGRESS
SUMS = {
    "input_rows": 1400,
    "metric_sums": {"records_in": 1400, "pairs_out": 1000, "late": 4, "max_event_time_ms": 18},
}


def test_progress_gives_last_batch_figures_and_running_totals() -> None:
    status = _status(os.getpid())
    status.with_progress({**PROGRESS, "batchId": 4}, SUMS)
    assert status.batch == 4
    assert status.input_rows == 700
    assert status.duration_s == 0.5
    assert (status.state_rows, status.state_bytes) == (12, 4096)
    assert status.totals == {"input_rows": 1400, "records_in": 1400, "pairs_out": 1000, "late": 4}
    assert status.metrics["max_event_time_ms"] == 9


def test_a_run_whose_process_died_is_gone(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = QueryStatus(name="stats", run_id="r1", pid=int(child.stdout), process_start="1")
    alive = _status(os.getpid())
    for status in (dead, alive):
        (tmp_path / f"{status.name}.{status.run_id}.json").write_text(json.dumps(asdict(status)))
    assert [s.name for s in read_statuses(tmp_path)] == ["join"]
    every = {s.name: s.state for s in read_statuses(tmp_path, include_finished=True)}
    assert every == {"join": RUNNING, "stats": GONE}


def test_status_command_lists_running_queries(tmp_path: Path) -> None:
    status = _status(os.getpid())
    one_batch = {"input_rows": 700, "metric_sums": PROGRESS["observedMetrics"]["join_metrics"]}
    status.with_progress(PROGRESS, one_batch)
    folder = tmp_path / "status"
    folder.mkdir()
    (folder / "join.run.json").write_text(json.dumps(asdict(status)))
    env = {"STATESTREAM_PATHS__DATA_DIR": str(tmp_path)}
    table = run_cli("status", env=env)
    assert table.exit_code == 0, table.stderr
    assert "join" in table.stdout and "pairs 500" in table.stdout  # the declared label
    listed = run_cli("status", "--json", env=env)
    assert json.loads(listed.stdout)["totals"]["pairs_out"] == 500
    empty = run_cli("status", env={"STATESTREAM_PATHS__DATA_DIR": str(tmp_path / "none")})
    assert "no streaming query is running" in empty.stdout


def test_a_runs_progress_file_gives_its_last_batch_and_totals(tmp_path: Path) -> None:
    """The JVM's `QueryProgressFiles` keeps the last report and the run's sums beside the status
    file; the totals are the sums of counters, not of maxima or lags."""
    status = _status(os.getpid())
    name = f"{status.name}.{status.run_id}"
    (tmp_path / f"{name}.json").write_text(json.dumps(asdict(status)))
    progress = {"progress": {**PROGRESS, "batchId": 4}, **SUMS}
    (tmp_path / f"{name}.progress").write_text(json.dumps(progress))
    os.utime(tmp_path / f"{name}.progress", (status.started + 30, status.started + 30))
    [read] = read_statuses(tmp_path)
    assert read.updated == status.started + 30  # when the last batch was reported
    assert (read.batch, read.input_rows, read.state_rows) == (4, 700, 12)
    assert read.totals == {"input_rows": 1400, "records_in": 1400, "pairs_out": 1000, "late": 4}
    assert read.metrics["max_event_time_ms"] == 9  # the last batch's, not a sum


def test_before_its_first_batch_a_run_has_no_figures(tmp_path: Path) -> None:
    status = _status(os.getpid())
    (tmp_path / f"{status.name}.{status.run_id}.json").write_text(json.dumps(asdict(status)))
    [read] = read_statuses(tmp_path)
    assert (read.batch, read.totals) == (None, {})


def _with_offsets(progress: dict, offsets: dict) -> dict:
    return {**progress, "sources": [{"endOffset": offsets, "latestOffset": offsets}]}


def test_a_run_has_committed_what_its_last_batch_read(tmp_path: Path) -> None:
    status = _status(os.getpid())
    status.checkpoint = str(tmp_path / "join")
    status.with_progress(_with_offsets(PROGRESS, {"machine.data": {"0": 2100}}), SUMS)
    assert status.committed_offsets() == {"machine.data": {0: 2100}}


def test_before_its_first_batch_a_run_has_committed_what_its_checkpoint_has(
    tmp_path: Path,
) -> None:
    status = _status(os.getpid())
    assert status.committed_offsets() == {}  # no progress, no checkpoint
    checkpoint = tmp_path / "join"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
    (checkpoint / "offsets" / "4").write_text('v1\n{}\n{"machine.data":{"0":700}}')
    (checkpoint / "commits" / "4").write_text("v1\n{}")
    status.checkpoint = str(checkpoint)
    assert status.committed_offsets() == {"machine.data": {0: 700}}


def test_the_listener_names_the_checkpoint_in_the_sessions_root(tmp_path: Path) -> None:
    listener = QueryStatusListener(tmp_path / "status", checkpoint_root=str(tmp_path / "cp"))
    listener.started("join", "run-1")
    written = json.loads((tmp_path / "status" / "join.run-1.json").read_text())
    assert written["checkpoint"] == str(tmp_path / "cp" / "join")
    QueryStatusListener(tmp_path / "other").started("join", "run-2")
    assert json.loads((tmp_path / "other" / "join.run-2.json").read_text())["checkpoint"] is None


def test_offsets_read_back_from_json_have_numbered_partitions() -> None:
    status = _status(os.getpid())
    status.offsets = {"machine.data": {0: 5, 1: 6}}
    again = QueryStatus(**json.loads(json.dumps(asdict(status))))
    assert again.offsets == {"machine.data": {0: 5, 1: 6}}


def _one_run_with_offsets(tmp_path: Path) -> dict[str, str]:
    """A status folder with a running `join` whose last batch read machine.data to 2100; the
    environment that points a command at it and at a Kafka nobody runs."""
    status = _status(os.getpid())
    name = f"{status.name}.{status.run_id}"
    folder = tmp_path / "status"
    folder.mkdir()
    (folder / f"{name}.json").write_text(json.dumps(asdict(status)))
    progress = _with_offsets(PROGRESS, {"machine.data": {"0": 2100}})
    (folder / f"{name}.progress").write_text(json.dumps({"progress": progress, **SUMS}))
    [port] = free_ports(1)
    return {
        "STATESTREAM_PATHS__DATA_DIR": str(tmp_path),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
        "STATESTREAM_KAFKA__SASL_USERNAME": "nobody",
    }


def test_status_shows_the_lag_as_unknown_when_kafka_does_not_answer(tmp_path: Path) -> None:
    env = _one_run_with_offsets(tmp_path)
    listed = run_cli("status", "--json", "--lag-timeout", "1", env=env)
    assert listed.exit_code == 0, listed.stderr
    record = json.loads(listed.stdout)
    assert record["lag"] is None
    assert record["offsets"] == {"machine.data": {"0": 2100}}
    table = run_cli("status", "--lag-timeout", "1", env=env)
    assert table.exit_code == 0, table.stderr
    assert "kafka lag" in table.stdout
    row = next(line for line in table.stdout.splitlines() if line.strip("│ ").startswith("join"))
    assert row.split("│")[7].strip() == "–"  # the kafka lag column


def test_status_asks_kafka_nothing_with_a_lag_timeout_of_zero(tmp_path: Path) -> None:
    env = _one_run_with_offsets(tmp_path)
    started = time.monotonic()
    listed = run_cli("status", "--json", "--lag-timeout", "0", env=env)
    assert listed.exit_code == 0, listed.stderr
    assert json.loads(listed.stdout)["lag"] is None
    assert time.monotonic() - started < 30
