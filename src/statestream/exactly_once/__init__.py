"""Exactly-once output to Kafka, written by Spark's tasks: the whole write path, and why it holds.

Spark's own Kafka sink and a plain `foreachBatch` are at-least-once: after a crash Spark runs the
last batch again. statestream's queries write through a Spark sink of their own instead. The
Python side is this package; the Java side is `jvm/exactly-once/src/io/statestream/kafka/`
(`io.statestream.kafka`, compiled into `statestream-exactly-once.jar` by `make setup`).

- `packed_rows`: what a query's stateful processor returns, its records packed (`OutputRows`):
  one row per kind and topic holding `count` records, `keys` a JSON array of [key, how many in a
  row], `values` the records' values one per line. `TransactionalPartition.unpack` reads them.
- `sink`: the Spark wiring. `start_query` starts a query's packed rows on the sink
  (`ExactlyOnceKafkaSink`, format `SINK_FORMAT`) with its name, checkpoint and trigger
  (`QueryRun`); `QueryOptions` are the options every job's query shares.
- `markers`: the commit marker and the commits topic (compacted, one partition, created if
  missing). A marker's key is `statestream.<query>.<checkpoint's query id>.<partition>`, also the
  partition's transactional id; its value `{"query": "<query>.<checkpoint's query id>",
  "partition": 0, "batch_id": 7}`. `CommitMarkers.java` writes and reads them.
- `write`: the public wrapper, `write_exactly_once(df, topic, …)`: any streaming DataFrame, one
  JSON record per row (also `statestream.spark.write_exactly_once`).

On the JVM, `MicroBatchSink` runs each micro-batch's plan in one Spark job whose tasks write
their own partition (`PartitionWriter`) through a transactional producer kept per partition
(`TransactionalPartition`); the driver receives a few numbers per task, never records.

Why each record reaches a `read_committed` consumer exactly once:

1. *Every attempt computes the same records.* A batch's input offsets are in Spark's offset log
   before it runs; a task of batch N, first attempt or retry, loads its partition's state as it
   was after batch N-1 (the state store is versioned by batch, and a failed attempt never makes
   its version the one the next batch reads); the processors sort their rows by Kafka offset.
2. *A transaction per batch and partition, with its marker inside.* Each task writes its
   partition's records of batch N and the marker (query, partition, N) on the commits topic in
   one Kafka transaction: a `read_committed` consumer sees a partition's batch all or nothing.
3. *The newest attempt fences all earlier ones.* Every attempt of a partition (a task retry, a
   speculative copy, the replay after a crash) uses the same transactional id; its
   `initTransactions` makes the broker abort an earlier attempt's open transaction and refuse
   any commit it tries later.
4. *A replay finds its marker and writes nothing.* Only after fencing does an attempt read its
   partition's last marker (read_committed). If it says batch N, an earlier attempt committed
   it and this one skips it; if not, no earlier attempt can commit any more, and this one
   writes it.
5. *Readers read committed data only.* Every job reads its input `read_committed`
   (`statestream.jobs.kafka_input.committed_stream`), so an aborted or open attempt's records
   never reach the next query.

This holds while a query is restarted with the same checkpoint and the same query name (the
transactional id holds the checkpoint's query id: batch ids start again at 0 with a new
checkpoint, whose output is then written again rather than taken for a replay) and while the
commits topic is kept. The packed rows, the marker and the status files that the same jar
writes are pinned by golden files that Python and Java both read (`tests/exactly_once/golden/`,
`tests/jobs/golden/`); a change on either side fails them.

The names below are imported when first used (PEP 562): `packed_rows` is imported in Spark's
Python workers, which should not load pyspark's session or the Kafka admin client with it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statestream.exactly_once.markers import (
        COMMITS_TOPIC_CONFIG,
        CommitMarker,
        ensure_commits_topic,
        last_committed,
        read_marker,
    )
    from statestream.exactly_once.packed_rows import OutputRows, output_schema, records
    from statestream.exactly_once.sink import (
        SINK_FORMAT,
        QueryOptions,
        QueryRun,
        TaskFault,
        start_query,
    )
    from statestream.exactly_once.write import write_exactly_once

_HOMES = {
    "COMMITS_TOPIC_CONFIG": "statestream.exactly_once.markers",
    "CommitMarker": "statestream.exactly_once.markers",
    "ensure_commits_topic": "statestream.exactly_once.markers",
    "last_committed": "statestream.exactly_once.markers",
    "read_marker": "statestream.exactly_once.markers",
    "OutputRows": "statestream.exactly_once.packed_rows",
    "output_schema": "statestream.exactly_once.packed_rows",
    "records": "statestream.exactly_once.packed_rows",
    "SINK_FORMAT": "statestream.exactly_once.sink",
    "QueryOptions": "statestream.exactly_once.sink",
    "QueryRun": "statestream.exactly_once.sink",
    "TaskFault": "statestream.exactly_once.sink",
    "start_query": "statestream.exactly_once.sink",
    "write_exactly_once": "statestream.exactly_once.write",
}

__all__ = [
    "COMMITS_TOPIC_CONFIG",
    "SINK_FORMAT",
    "CommitMarker",
    "OutputRows",
    "QueryOptions",
    "QueryRun",
    "TaskFault",
    "ensure_commits_topic",
    "last_committed",
    "output_schema",
    "read_marker",
    "records",
    "start_query",
    "write_exactly_once",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
