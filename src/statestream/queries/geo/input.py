"""`input.vehicle.positions` as a stream of decoded positions, bucketed by cell, watermarked.

Kafka rows (read_committed) → a `mapInPandas` that decodes the values and places each position
in its H3 cell (`queries.geo.decoding`) → a bucket per row: a hash of the cell modulo `buckets`
(of the Kafka offset for a refused value or a position without a fix, which only need counting
or dead-lettering), labelled as `statestream.spark.bucket_labels` spreads them.

**The watermark.** Spark's query watermark (`withWatermark`) is the one of the thesis: the
largest event time seen in earlier micro-batches minus `disorder`. Spark keeps it in the offset
log with the batch's offsets before the batch runs, so every attempt of a batch sees the same.
Its column is the event time shifted by `WATERMARK_SHIFT_MS` (100 years) with the delay
shifted by as much: the watermark comes out unchanged, but no row is ever behind it in Spark's
eyes, so no filter of Spark's on late rows (stateful operators may drop them silently) can match:
the processor judges lateness with the allowed lateness and writes late positions out. A
refused value gets event time 0: it moves no watermark and is never filtered.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings
from statestream.ingest.envelope import Envelope
from statestream.jobs.kafka_input import committed_stream
from statestream.queries.geo.decoding import decode_positions
from statestream.spark.bucket_labels import bucket_labels

WATERMARK_SHIFT_MS = 36_500 * 86_400_000  # 100 years
DECODED_SCHEMA = (
    "spread long, cell long, t long, vehicle long, lat double, long double, speed double, "
    "delay double, partition int, offset long, reason string, raw binary"
)


def kafka_positions(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    *,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
) -> DataFrame:
    """`topic` decoded and bucketed: (bucket, event_time, cell, t, vehicle, lat, long, speed,
    delay, partition, offset, reason, raw), with the watermark of `settings.geo.disorder_s`."""
    rows = committed_stream(
        spark,
        settings,
        topic,
        starting_offsets=starting_offsets,
        max_offsets_per_trigger=max_offsets_per_trigger,
    )
    decode = partial(_decoded_batches, settings.ingest.envelope, settings.geo.resolution)
    decoded = rows.select("value", "partition", "offset").mapInPandas(decode, DECODED_SCHEMA)
    buckets = settings.geo.buckets
    labels = F.array(*(F.lit(label) for label in bucket_labels(buckets)))
    index = F.pmod(F.xxhash64("spread"), F.lit(buckets))
    shifted = F.col("t") + F.lit(WATERMARK_SHIFT_MS)
    disorder_ms = round(settings.geo.disorder_s * 1000)
    return decoded.select(
        F.element_at(labels, (index + 1).cast("int")).cast("int").alias("bucket"),
        F.timestamp_millis(shifted).alias("event_time"),
        *(c for c in decoded.columns if c != "spread"),
    ).withWatermark("event_time", f"{WATERMARK_SHIFT_MS + disorder_ms} milliseconds")


def _decoded_batches(
    envelope: Envelope, resolution: int, batches: Iterator[pd.DataFrame]
) -> Iterator[pd.DataFrame]:
    """mapInPandas: Kafka rows (value, partition, offset) → decoded positions (DECODED_SCHEMA)."""
    for batch in batches:
        values = batch["value"].to_numpy(dtype=object)
        columns = decode_positions(values, envelope, resolution)
        refused = pd.notna(columns["reason"])
        offsets = batch["offset"].to_numpy()
        cell = columns["cell"]
        spread = cell.copy()
        spread[cell == 0] = offsets[cell == 0]
        raw = values.copy()
        raw[~refused] = None
        yield pd.DataFrame(
            {
                "spread": spread,
                **columns,
                "partition": batch["partition"].to_numpy(),
                "offset": offsets,
                "raw": raw,
            }
        )[
            [
                "spread",
                "cell",
                "t",
                "vehicle",
                "lat",
                "long",
                "speed",
                "delay",
                "partition",
                "offset",
                "reason",
                "raw",
            ]
        ]
