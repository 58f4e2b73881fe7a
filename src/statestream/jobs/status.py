"""Where streaming queries report their figures, so that `statestream status` can list them.

Every SparkSession built by `spark_session` carries a listener in its JVM (`QueryProgressFiles`
of `jvm/exactly-once`): after each batch of a query run it replaces
`<data_dir>/status/<query>.<run id>.progress` with the batch's progress report and the run's
sums; on the run's start, idle and end it calls `QueryStatusListener` here, which keeps
`<query>.<run id>.json` (process, state, times, error). `read_statuses` reads both back into
`QueryStatus`es (the last batch's figures: input rows, rates, duration, state rows and bytes, the
observed metrics, the Kafka offsets read up to; and running totals) and tells a running query
from one whose process is gone. Progress reports stay in the JVM: through py4j, each would cost
dozens of calls per batch. `statuses_and_lags` adds each query's Kafka lag (`jobs.lag`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from statestream.config import Settings
from statestream.jobs.lag import (
    LAG_TIMEOUT_S,
    QueryLag,
    TopicOffsets,
    committed_offsets,
    progress_offsets,
    query_lags,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

RUNNING, STOPPED, FAILED, GONE = "running", "stopped", "failed", "gone"
KEEP_FINISHED_S = 7 * 24 * 3600  # status files of finished runs older than this are removed


@dataclass
class QueryStatus:
    """The last known figures of one run of a streaming query."""

    name: str
    run_id: str
    pid: int
    process_start: str
    state: str = RUNNING
    started: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    batch: int | None = None
    input_rows: int = 0
    input_rows_per_s: float | None = None
    processed_rows_per_s: float | None = None
    duration_s: float | None = None
    state_rows: int | None = None
    state_bytes: int | None = None
    watermark: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    offsets: TopicOffsets = field(default_factory=dict)  # Kafka offsets the last batch read to
    checkpoint: str | None = None  # <the session's checkpoint root>/<name>, if it has one

    def __post_init__(self) -> None:
        # read back from JSON, partitions are texts
        self.offsets = {t: {int(p): o for p, o in ps.items()} for t, ps in self.offsets.items()}

    def with_progress(self, progress: dict[str, Any], sums: dict[str, Any]) -> None:
        """Take the figures of a run's last batch (its progress report as JSON data) and the
        run's totals from `sums` (`QueryProgressFiles`: input_rows, metric_sums)."""
        self.batch = progress.get("batchId")
        self.input_rows = int(progress.get("numInputRows") or 0)
        self.input_rows_per_s = progress.get("inputRowsPerSecond")
        self.processed_rows_per_s = progress.get("processedRowsPerSecond")
        self.duration_s = (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0
        operators = progress.get("stateOperators") or []
        if operators:
            self.state_rows = sum(int(op.get("numRowsTotal") or 0) for op in operators)
            self.state_bytes = sum(state_bytes(op) for op in operators)
        self.watermark = (progress.get("eventTime") or {}).get("watermark")
        self.metrics = {
            name: value
            for observed in (progress.get("observedMetrics") or {}).values()
            for name, value in observed.items()
        }
        counters = {
            name: value
            for name, value in (sums.get("metric_sums") or {}).items()
            if _is_counter(name) and isinstance(value, int | float)
        }
        self.totals = {"input_rows": sums.get("input_rows", 0), **counters}
        self.offsets = progress_offsets(progress)

    def committed_offsets(self) -> TopicOffsets:
        """The Kafka offsets the run has committed: those its last batch read up to (from the
        batch's progress report, sent once the batch committed); before its first batch, those
        of the newest committed batch in `checkpoint` (the query's folder in its session's
        checkpoint root, where statestream's queries keep it unless told otherwise)."""
        if self.offsets:
            return self.offsets
        return committed_offsets(Path(self.checkpoint)) if self.checkpoint else {}


def state_bytes(operator: dict[str, Any]) -> int:
    """Bytes of a state operator: RocksDB's SST files when reported, else memory used."""
    custom = operator.get("customMetrics") or {}
    return int(
        custom.get("rocksdbTotalSSTFilesBytes") or custom.get("rocksdbSstFileSize") or 0
    ) or int(operator.get("memoryUsedBytes") or 0)


def batch_figures(progress: dict, metrics_name: str, counters: Sequence[str]) -> dict[str, Any]:
    """The figures of one batch from its progress report, as the run commands print them.

    Records in, the query's observed metrics `counters` (under `metrics_name`), state rows and
    bytes, batch duration and event-time lag (batch time minus `max_event_time_ms`).
    """
    observed = (progress.get("observedMetrics") or {}).get(metrics_name) or {}
    if hasattr(observed, "asDict"):  # observed metrics arrive as a Row
        observed = observed.asDict()
    state = (progress.get("stateOperators") or [{}])[0]
    batch_ms = _epoch_ms(progress.get("timestamp"))
    latest_event = observed.get("max_event_time_ms")
    lag = (batch_ms - latest_event) / 1000.0 if batch_ms and latest_event else None
    return {
        "batch": progress.get("batchId"),
        "records_in": observed.get("records_in", progress.get("numInputRows", 0)),
        **{name: observed.get(name, 0) for name in counters},
        "state_rows": state.get("numRowsTotal"),
        "state_bytes": state_bytes(state) if state else None,
        "duration_s": (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0,
        "event_time_lag_s": lag,
    }


def batch_line(figures: Mapping[str, Any], counts: str) -> str:
    """The line a run command prints for one batch (`batch_figures`): the batch and its records
    in, then the query's own `counts`, then the batch's duration and event-time lag.

    >>> m = {"batch": 3, "records_in": 1200, "duration_s": 0.5, "event_time_lag_s": None}
    >>> batch_line(m, "7 pairs")
    'batch 3: 1,200 in, 7 pairs, 0.50 s, event-time lag –'
    """
    lag = figures["event_time_lag_s"]
    lag_text = f"{lag:.1f} s" if lag is not None else "–"
    return (
        f"batch {figures['batch']}: {figures['records_in']:,} in, {counts}, "
        f"{figures['duration_s']:.2f} s, event-time lag {lag_text}"
    )


def _epoch_ms(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000.0


def _is_counter(name: str) -> bool:
    """Observed metrics that add up over batches (not maxima, lags or state sizes)."""
    return not name.startswith(("max_", "state_")) and not name.endswith(("_ms", "_s"))


def status_folder(settings: Settings) -> Path:
    return settings.paths.data_dir / "status"


class QueryStatusListener:
    """Keeps one status file per query run of this process: the start, idle and end of each run,
    handed on by the JVM's `QueryProgressFiles` (`install_status_listener`). `checkpoint_root`:
    the session's (`spark.sql.streaming.checkpointLocation`), where a run's checkpoint is
    `<root>/<name>` by statestream's convention."""

    def __init__(self, folder: Path, checkpoint_root: str | None = None) -> None:
        self.folder = folder
        self.checkpoint_root = checkpoint_root
        self._runs: dict[str, QueryStatus] = {}

    def started(self, name: str, run_id: str) -> None:
        pid = os.getpid()
        status = QueryStatus(name=name, run_id=run_id, pid=pid, process_start=_process_start(pid))
        if self.checkpoint_root:
            status.checkpoint = str(Path(self.checkpoint_root) / name)
        self._runs[run_id] = status
        _prune(self.folder, status.name)
        self._write(status)

    def idle(self, run_id: str) -> None:
        status = self._runs.get(run_id)
        if status is not None:
            status.updated = time.time()
            self._write(status)

    def terminated(self, run_id: str, error: str | None) -> None:
        status = self._runs.pop(run_id, None)
        if status is not None:
            status.updated = time.time()
            status.state = FAILED if error is not None else STOPPED
            status.error = error
            self._write(status)

    def _write(self, status: QueryStatus) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{status.name}.{status.run_id}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(status)))
        tmp.replace(path)

    class Java:
        implements: ClassVar[list[str]] = ["io.statestream.status.QueryLifecycle"]


def install_status_listener(spark: SparkSession, folder: Path) -> None:
    """Let every query of `spark` report into `folder` for `statestream status` (once a session).

    The listener is the JVM's `io.statestream.status.QueryProgressFiles` (statestream's jar);
    it calls a `QueryStatusListener` through py4j's callback server for the rare events.
    """
    if getattr(spark, "_statestream_status_listener", None):
        return
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)
    lifecycle = QueryStatusListener(
        folder, spark.conf.get("spark.sql.streaming.checkpointLocation", None)
    )
    jvm = spark._jvm
    assert jvm is not None  # None only before a session has started its JVM
    jvm_listener = jvm.io.statestream.status.QueryProgressFiles(str(folder), lifecycle)
    spark._jsparkSession.streams().addListener(jvm_listener)
    spark._statestream_status_listener = lifecycle  # type: ignore[attr-defined]


def progress_after(query: StreamingQuery, batch_id: int) -> list[dict[str, Any]]:
    """`query`'s recent progress reports of batches after `batch_id`, oldest first, as JSON data:
    one py4j call (`ProgressReports`), where `query.recentProgress` makes one per report."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    assert jvm is not None  # a query runs: its session's JVM is up
    reports = jvm.io.statestream.status.ProgressReports
    return json.loads(reports.after(query._jsq, batch_id))


def read_statuses(folder: Path, include_finished: bool = False) -> list[QueryStatus]:
    """The queries that reported into `folder`, running ones first; a dead process's are `gone`."""
    statuses = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            status = QueryStatus(**json.loads(path.read_text()))
            _take_last_progress(status, path.with_suffix(".progress"))
        except (OSError, ValueError, TypeError, AttributeError):
            continue  # being replaced, or not ours
        if status.state == RUNNING and _process_start(status.pid) != status.process_start:
            status.state = GONE
        if status.state == RUNNING or include_finished:
            statuses.append(status)
    return sorted(statuses, key=lambda s: (s.state != RUNNING, s.name, -s.started))


def statuses_and_lags(
    settings: Settings, include_finished: bool = False, timeout_s: float = LAG_TIMEOUT_S
) -> list[tuple[QueryStatus, QueryLag | None]]:
    """`read_statuses` of the settings' status folder, each with its Kafka lag: None (unknown)
    when Kafka gives no end offsets within `timeout_s` (0: not asked) or the run has committed
    no batch yet."""
    statuses = read_statuses(status_folder(settings), include_finished)
    committed = [status.committed_offsets() for status in statuses]
    return list(zip(statuses, query_lags(settings, committed, timeout_s), strict=True))


def _take_last_progress(status: QueryStatus, path: Path) -> None:
    """The figures of a run's `.progress` file (`QueryProgressFiles`; none before its first
    batch); the status was updated when that file was written, if that came later."""
    try:
        written = path.stat().st_mtime
        progress = json.loads(path.read_bytes())
    except FileNotFoundError:
        return
    status.with_progress(progress["progress"], progress)
    status.updated = max(status.updated, written)


def _process_start(pid: int) -> str:
    """The start time of process `pid` (tells a live process from a reused pid), '' if none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return ""
        return "alive"


def _prune(folder: Path, name: str) -> None:
    """Remove files of earlier runs of `name` whose process is gone, and any old finished ones."""
    now = time.time()
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        dead = _process_start(old.get("pid", -1)) != old.get("process_start")
        if dead and (old.get("name") == name or now - old.get("updated", 0) > KEEP_FINISHED_S):
            path.unlink(missing_ok=True)
            path.with_suffix(".progress").unlink(missing_ok=True)
