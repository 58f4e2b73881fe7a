"""Streaming queries run from the command line: a line per batch; Ctrl-C stops them cleanly."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from statestream.cli._common import console
from statestream.errors import StatestreamError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from statestream.config import Settings

# how long Ctrl-C waits in all for the queries' running batches to end before it cancels them
STOP_WAIT_S = 10.0
_POLL_S = 0.02
# statestream's Python errors, and the exactly-once Kafka sink's (io.statestream.kafka.WriteFailed)
_STATESTREAM_ERROR = re.compile(r"(?:statestream\.errors\.\w+|io\.statestream\.\w+\.\w+): (.+)")


@dataclass
class Watched:
    """A started query; `line` turns one batch's progress into the line printed for it."""

    query: StreamingQuery
    line: Callable[[dict], str] | None = None
    seen: int = field(default=-1, init=False)

    def print_new_batches(self, prefix: str) -> None:
        if self.line is None:
            return
        from statestream.jobs.status import progress_after

        for progress in progress_after(self.query, self.seen):
            if ran_a_batch(progress):
                self.seen = progress["batchId"]
                console.print(prefix + self.line(progress), highlight=False, markup=False)

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop the query; with `wait_s`, once the running batch has ended, if it ends within
        `wait_s` seconds. Spark's `stop` cancels a running batch's tasks, which is safe (the
        next start does that batch again) but logs each task's interruption as an error (a
        Python worker that "exited unexpectedly", a state store's interrupted rollback). A
        query with a backlog starts its next batch at once: that one is stopped as it starts,
        before its tasks run."""
        deadline = time.monotonic() + wait_s
        ended = _progress_time(self.query)
        while (
            time.monotonic() < deadline
            and self.query.isActive
            and self.query.status.get("isTriggerActive")
            and _progress_time(self.query) == ended
        ):
            time.sleep(_POLL_S)
        self.query.stop()


def _progress_time(query: StreamingQuery) -> str | None:
    """When the query's last trigger ended (a batch's, or an idle one's), as Spark reports it."""
    progress = query.lastProgress
    return None if progress is None else progress.get("timestamp")


def run_watched(
    settings: Settings, app_name: str, start: Callable[[SparkSession], Sequence[Watched]]
) -> None:
    """Start queries in a Spark application of their own and `watch` them; stop it after.

    `start` starts the queries on the application's session; one line names them once started.
    """
    from statestream.jobs.session import spark_session

    spark = spark_session(settings, app_name=app_name)
    try:
        queries = start(spark)
        names = ", ".join(w.query.name for w in queries)
        if len(queries) == 1:
            console.print(f"query [bold]{names}[/] started; Ctrl-C stops it")
        else:
            console.print(f"queries [bold]{names}[/] started; Ctrl-C stops them")
        watch(queries)
    finally:
        spark.stop()


def ran_a_batch(progress: dict) -> bool:
    """False for the progress Spark reports while a query waits for data (every 10 s).

    That report carries the id of the batch still to come; taken for that batch, it would hide
    the batch's own line when the batch runs.
    """
    return "addBatch" in (progress.get("durationMs") or {})


def watch(queries: Sequence[Watched]) -> None:
    """Print each query's batches until all have stopped; Ctrl-C stops them all.

    A query that fails stops the others and raises `StatestreamError` with its reason.
    """
    prefix = (lambda w: f"[{w.query.name}] ") if len(queries) > 1 else (lambda w: "")
    with _interrupts() as interrupted:
        while not interrupted.is_set() and any(w.query.isActive for w in queries):
            if interrupted.wait(0.5):
                break
            for watched in queries:
                watched.print_new_batches(prefix(watched))
                _raise_if_failed(watched, queries)
        if interrupted.is_set():
            console.print("stopping … (each query after its running batch; Ctrl-C again: at once)")
            deadline = time.monotonic() + STOP_WAIT_S
            for watched in queries:
                watched.stop(wait_s=max(0.0, deadline - time.monotonic()))
        else:
            for watched in queries:
                watched.print_new_batches(prefix(watched))
                _raise_if_failed(watched, queries)
    for watched in queries:
        console.print(f"query {watched.query.name} stopped")


@contextmanager
def _interrupts() -> Iterator[threading.Event]:
    """An event that Ctrl-C sets while `watch` runs (a second Ctrl-C raises KeyboardInterrupt).

    Instead of PySpark's handler, which cancels all jobs, so that each query's running batch
    failed with SPARK_JOB_CANCELLED (an error and a stack trace in the log per query), and then
    raises KeyboardInterrupt inside whatever call to the JVM was waiting, which could leave
    py4j without a working connection to stop the queries with. A stopped query's batch is
    simply not done: the next run does it again, exactly once as ever.
    """
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def on_interrupt(signum: int, frame: object) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _raise_if_failed(watched: Watched, queries: Sequence[Watched]) -> None:
    failure = watched.query.exception()
    if failure is None:
        return
    for other in queries:
        if other.query.isActive:
            other.stop()
    raise StatestreamError(f"query {watched.query.name} failed: {failure_reason(str(failure))}")


def failure_reason(description: str) -> str:
    """The statestream error inside a failed query's description, else its first line."""
    matches = _STATESTREAM_ERROR.findall(description)
    return matches[-1] if matches else description.strip().splitlines()[0]
