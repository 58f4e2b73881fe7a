"""`statestream bench sink`: points per second into InfluxDB, by the writer alone and by the query.

Input: the real sample's records cloned into many machines (each clone shifted in time), plus one
joined pair (machine_out) per torque record, as JSON values exactly as they are on Kafka.

1. Writer: the values turned into points (`PointBuilder`) and written (`InfluxWriter`, requests
   of `influx_sink.points_per_request`) to a fresh database: points/s of each step and of both.
2. Query: the same values preloaded into fresh topics, and the Spark sink query run over them
   (availableNow, `influx_sink.max_offsets_per_trigger` records per batch): points/s over its
   batches after the first (sustained: the first one carries the JVM's warm-up), over all
   batches, and over the whole run including the query's start; batch time split into Kafka read
   and collect, conversion and InfluxDB writes. Points are counted back from InfluxDB.

The topics, database and checkpoint are removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.queries.sink_influx.job import (
    InfluxSinkOptions,
    SinkBatchReport,
    start_influx_sink_query,
)
from statestream.services import grant_access
from statestream.sinks import InfluxWriter, PointBuilder

SAMPLE = Path(__file__).resolve().parents[1] / "src/statestream/data/machine_events.jsonl"
NOT_QUANTITIES = frozenset({"Thing", "Timestamp", "id"})
CLONE_SHIFT_MS = 7 * 24 * 3600 * 1000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SinkBenchOptions:
    records: int = 1_000_000
    partitions: int = 4
    max_offsets_per_trigger: int | None = None  # default: the settings'


def bench_values(records: int) -> list[tuple[str, str]]:
    """(measurement, JSON value) of `records` records: the sample cloned, plus pairs."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    values: list[tuple[str, str]] = []
    clone = 0
    while len(values) < records:
        shift = clone * CLONE_SHIFT_MS
        for row in rows:
            thing, t = f"{row['Thing']}-{clone}", row["Timestamp"] + shift
            for quantity, result in row.items():
                if quantity in NOT_QUANTITIES:
                    continue
                record = {"thing": thing, "quantity": quantity, "phenomenonTime": t}
                values.append(("machine_data", json.dumps({**record, "result": result})))
                if quantity.startswith("vaTorque_"):
                    values.append(("machine_out", json.dumps(_pair(thing, quantity, t, result))))
        clone += 1
    return values[:records]


def _pair(thing: str, torque_quantity: str, t: int, torque: float) -> dict:
    component = torque_quantity.split("_", 1)[1]
    return {
        "thing": thing,
        "quantity": f"vaPower_{component}",
        "phenomenonTime": t - 0.5,
        "result": torque * 300.0,
        "left": {"quantity": f"actSpeed_{component}", "phenomenonTime": t - 1, "result": 300.0},
        "right": {"quantity": torque_quantity, "phenomenonTime": t, "result": torque},
    }


def run(spark: SparkSession, settings: Settings, options: SinkBenchOptions, say: Progress) -> dict:
    """Both runs; the figures as one JSON-ready dict."""
    name = f"bench_sink_{uuid.uuid4().hex[:8]}"
    say(f"input: {options.records:,} records (sample cloned into machines, plus pairs)")
    values = bench_values(options.records)
    try:
        figures = {"records": len(values), **_writer_run(settings, f"{name}_w", values, say)}
        figures.update(_query_run(spark, settings, name, values, options, say))
    finally:
        _drop_database(settings, f"{name}_w")
        _drop_database(settings, name)
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    figures["cpus"] = os.cpu_count()
    return figures


def _writer_run(settings: Settings, database: str, values: list, say: Progress) -> dict:
    say("writer: values → points → InfluxDB")
    builder = PointBuilder()
    started = time.perf_counter()
    points = [
        point for measurement, value in values for point in builder.points(measurement, value)
    ]
    converted = time.perf_counter()
    writer = InfluxWriter(
        settings.influx,
        database=database,
        points_per_request=settings.influx_sink.points_per_request,
    )
    writer.ensure_database()
    written = time.perf_counter()
    outcome = writer.write(points, label="bench")
    done = time.perf_counter()
    writer.close()
    assert outcome.written == len(points) and not outcome.rejected
    return {
        "points": len(points),
        "writer_points_per_s": round(len(points) / (done - started - (written - converted))),
        "convert_points_per_s": round(len(points) / (converted - started)),
        "write_points_per_s": round(len(points) / (done - written)),
        "write_requests": outcome.requests,
    }


def _query_run(
    spark: SparkSession,
    settings: Settings,
    name: str,
    values: list[tuple[str, str]],
    options: SinkBenchOptions,
    say: Progress,
) -> dict:
    bench_settings = _bench_topics(settings, name, options.partitions)
    say(f"query: preloading {len(values):,} records into topics {name}.*")
    _preload(bench_settings, values)
    checkpoint = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    try:
        say("query: the sink over the topics (availableNow)")
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        started = time.perf_counter()
        query = start_influx_sink_query(
            spark,
            bench_settings,
            InfluxSinkOptions(
                available_now=True,
                query_name=name,
                checkpoint=checkpoint,
                max_offsets_per_trigger=options.max_offsets_per_trigger,
            ),
        )
        query.awaitTermination()
        wall = time.perf_counter() - started
        if query.exception() is not None:
            raise RuntimeError(f"the sink query failed: {query.exception()}")
        reports = [SinkBatchReport.of(json.loads(p.json)) for p in query.recentProgress]
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
        _delete_topics(settings, _topic_names(bench_settings))
    points = sum(r.points for r in reports)
    batch_seconds = sum(r.seconds for r in reports)
    later = reports[1:] or reports  # the first batch carries the JVM's warm-up
    return {
        "points_per_s": round(sum(r.points for r in later) / sum(r.seconds for r in later)),
        "first_batch_points_per_s": round(reports[0].points_per_s),
        "all_batches_points_per_s": round(points / batch_seconds),
        "query_points": points,
        "query_points_in_influxdb": _count_points(bench_settings),
        "query_batches": len(reports),
        "query_batch_seconds": round(batch_seconds, 2),
        "query_convert_s": round(sum(r.convert_s for r in reports), 2),
        "query_write_s": round(sum(r.write_s for r in reports), 2),
        "query_wall_s": round(wall, 2),
        "query_wall_points_per_s": round(points / wall),
        "max_offsets_per_trigger": options.max_offsets_per_trigger
        or settings.influx_sink.max_offsets_per_trigger,
        "points_per_request": settings.influx_sink.points_per_request,
    }


def _bench_topics(settings: Settings, name: str, partitions: int) -> Settings:
    topics = settings.topics.model_copy(
        update={
            "machine_data": f"{name}.data",
            "machine_out": f"{name}.out",
            "stats": f"{name}.stats",
            "alerts": f"{name}.alerts",
            "dead_letter": f"{name}.dlq",
        }
    )
    influx = settings.influx.model_copy(update={"database": name})
    bench = settings.model_copy(update={"topics": topics, "influx": influx})
    admin = AdminClient(settings.kafka.client_config())
    new = [NewTopic(topic, partitions, 1) for topic in _topic_names(bench)]
    for future in admin.create_topics(new).values():
        future.result()
    grant_access(bench)  # the sink's user may read the bench's topics
    return bench


def _topic_names(settings: Settings) -> list[str]:
    t = settings.topics
    return [t.machine_data, t.machine_out, t.stats, t.alerts, t.dead_letter]


def _delete_topics(settings: Settings, topics: list[str]) -> None:
    """Delete the topics and wait for it: a request still queued when the process ends is lost."""
    admin = AdminClient(settings.kafka.client_config())  # alive until the futures resolve
    for future in admin.delete_topics(topics).values():
        future.result(30)


def _preload(settings: Settings, values: list[tuple[str, str]]) -> None:
    topic_of = {
        "machine_data": settings.topics.machine_data,
        "machine_out": settings.topics.machine_out,
    }
    producer = Producer(
        {**settings.kafka.client_config(), "linger.ms": 20, "compression.type": "lz4"}
    )
    for measurement, value in values:
        while True:
            try:
                producer.produce(topic_of[measurement], value=value)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def _influx(settings: Settings, q: str, database: str | None = None) -> dict:
    influx = settings.influx
    assert influx.password is not None
    response = requests.post(
        f"{influx.url}/query",
        params={"q": q, "db": database or ""},
        auth=(influx.username, influx.password.get_secret_value()),
        timeout=60,
    )
    response.raise_for_status()
    return response.json()


def _count_points(settings: Settings) -> int:
    total = 0
    for measurement, field in (("machine_data", "result"), ("machine_out", "result")):
        result = _influx(
            settings, f"SELECT count({field}) FROM {measurement}", settings.influx.database
        )
        series = result["results"][0].get("series")
        total += series[0]["values"][0][1] if series else 0
    return total


def _drop_database(settings: Settings, name: str) -> None:
    _influx(settings, f'DROP DATABASE "{name}"')
