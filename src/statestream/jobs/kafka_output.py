"""foreachBatch for stateful queries whose rows name their Kafka topic: exactly once to Kafka.

A query's output rows are packed (`jobs.output_rows`): (kind, topic, count, keys, values, …),
each holding `count` records of one topic; rows with an empty topic carry only figures for the
metrics and are not written. Each micro-batch goes out in one Kafka transaction
(`TransactionalKafkaWriter`); a batch Spark replays after a crash is recognised and skipped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statestream.config import Settings
from statestream.jobs.output_rows import records
from statestream.sinks.kafka_exactly_once import TransactionalKafkaWriter, checkpoint_query_id

BatchFunction = Callable[[DataFrame, int], None]


def exactly_once_batches(
    settings: Settings,
    query_name: str,
    checkpoint: Path,
    log: logging.Logger,
    pause_after_commit_s: float = 0.0,
) -> BatchFunction:
    """The foreachBatch function of query `query_name` with checkpoint `checkpoint`.

    `pause_after_commit_s` (crash tests only) prints "committed batch N to Kafka" after each
    commit and waits, so a test can kill the job between Kafka's commit and Spark's.
    """
    writers: list[TransactionalKafkaWriter] = []

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        if not writers:  # Spark has written the checkpoint's metadata by the first batch
            lineage = f"{query_name}.{checkpoint_query_id(checkpoint)}"
            writers.append(TransactionalKafkaWriter(settings, lineage))
        table = batch.select("topic", "keys", "values").toArrow()  # one action per batch
        rows = zip(*(table.column(name).to_pylist() for name in table.column_names), strict=True)
        batch_records = (record for row in rows if row[0] for record in records(*row))
        if not writers[0].write_batch(batch_id, batch_records):
            log.warning("batch %d of %s was committed before; skipped", batch_id, query_name)
        elif pause_after_commit_s:
            print(f"committed batch {batch_id} to Kafka", flush=True)
            time.sleep(pause_after_commit_s)

    return write_batch


def packed_count(condition: Column) -> Column:
    """The number of records in the output rows where `condition` holds (0 if none)."""
    return F.coalesce(F.sum(F.when(condition, F.col("count"))), F.lit(0))
