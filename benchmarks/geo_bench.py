"""`statestream bench geo`: positions per second through the geo-cell query, latency, baseline.

Input: simulated vehicles (straight runs through the Helsinki area at 1 Hz, 3 % without a fix)
encoded by the ingest codec of `settings.ingest.envelope`, keyed `oper/veh`, on a fresh topic
of `topics.vehicle_positions_partitions` partitions.

0. Warm-up: a geo query of its own over the first positions on a topic of their own
   (`--warmup-positions`), so that the JVM's compiled code and the Python workers are as in a
   query that has been running (as `bench pipeline` does).
1. Throughput: N positions preloaded, then the geo query (`start_geo_query`, availableNow, a
   fresh checkpoint) over them: positions/s over its batches, and over the batches after the
   first (sustained: the first carries the Python workers' and the JVM's warm-up).
2. Latency: positions produced at a fixed rate with event time = now while the query runs; for
   each position the seconds from its sending until a read_committed consumer sees a result of
   its cell and window that counts it (the first with `positions` ≥ its rank among the
   positions sent to that cell and window).
3. Baseline: Spark's own `window()` + `groupBy` on the same preloaded data (JSON decoded by
   `from_json`, the cell by a pandas UDF with h3, `approx_count_distinct` for the vehicles:
   exact distinct counts are not supported by Spark's streaming aggregation), written to the
   noop sink: its positions/s, and the ratio of the two sustained figures (both after the
   first batch: the baseline runs in a warm JVM, the query's first batch starts it).

Topics and checkpoints are removed at the end.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h3
import numpy as np
import orjson
import pandas as pd
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf

from statestream.config import Settings
from statestream.geo import assign_cells, cell_names
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.geo import QUERY
from statestream.queries.geo.job import GeoJobOptions, geo_spec, start_geo_query
from statestream.services import grant_access

Progress = Callable[[str], None]


@dataclass(frozen=True)
class GeoBenchOptions:
    positions: int = 1_000_000
    vehicles: int = 1_000
    max_offsets_per_trigger: int = 250_000
    rate: float = 2_000.0  # positions/s of the latency run
    latency_seconds: float = 30.0
    baseline: bool = True
    warmup_positions: int = 50_000


def simulated(count: int, vehicles: int, start_ms: int, seed: int = 1) -> dict[str, np.ndarray]:
    """`count` positions of `vehicles` vehicles at 1 Hz from `start_ms`, in time order."""
    rng = np.random.default_rng(seed)
    seconds = -(-count // vehicles)
    origin = np.array([60.17, 24.94]) + rng.uniform(-0.05, 0.05, (vehicles, 2))
    heading = rng.uniform(-1.2e-4, 1.2e-4, (vehicles, 2))
    s = np.repeat(np.arange(seconds), vehicles)[:count]
    v = np.tile(np.arange(vehicles), seconds)[:count]
    no_fix = rng.random(count) < 0.03
    return {
        "veh": v + 1,
        "t": start_ms + s * 1000 + rng.integers(0, 1000, count),
        "lat": np.where(no_fix, np.nan, origin[v, 0] + heading[v, 0] * (s % 600)),
        "long": np.where(no_fix, np.nan, origin[v, 1] + heading[v, 1] * (s % 600)),
        "speed": rng.uniform(0, 15, count),
        "delay": rng.integers(-120, 120, count),
    }


def encoded(columns: dict[str, np.ndarray], envelope: str, i: int, now_ms: int) -> tuple:
    """(key, value) of position `i` of `columns`."""
    lat, long = float(columns["lat"][i]), float(columns["long"][i])
    fix = not np.isnan(lat)
    position = VehiclePosition(
        22, int(columns["veh"][i]), int(columns["t"][i]), "bus", "1052", 1, "52",
        lat if fix else None, long if fix else None, float(columns["speed"][i]), 90,
        int(columns["delay"][i]), 1000, 0, 0, None, "08:15", "2026-11-25",
    )  # fmt: skip
    return position.key, vehicle_codec_for(envelope).encode(position, now_ms)


def run(spark: SparkSession, settings: Settings, options: GeoBenchOptions, say: Progress) -> dict:
    """The three parts (see the module); figures as one dict."""
    name = f"bench_geo_{uuid.uuid4().hex[:8]}"
    bench = _bench_settings(settings, name)
    folder = Path(tempfile.mkdtemp(prefix="statestream-bench-geo-"))
    try:
        start_ms = (int(time.time() * 1000) // 60_000 - 24 * 60) * 60_000
        warm_up = _warm_up(spark, settings, f"{name}_warmup", options, start_ms, folder, say)
        say(f"producing {options.positions:,} positions")
        columns = simulated(options.positions, options.vehicles, start_ms)
        _produce_all(bench, columns)
        figures = {**warm_up, **_throughput(spark, bench, options, folder / "geo", say)}
        if options.baseline:
            say("baseline: Spark's window() + groupBy on the same positions")
            figures.update(_baseline(spark, bench, options, folder / "baseline"))
            ours = figures["sustained_positions_per_s"] or figures["positions_per_s"]
            theirs = figures["baseline_sustained_positions_per_s"]
            theirs = theirs or figures["baseline_positions_per_s"]
            figures["ratio_to_baseline"] = round(ours / theirs, 2) if theirs else None
        say(f"latency: {options.rate:,.0f} positions/s for {options.latency_seconds:.0f} s")
        figures.update(_latency(spark, bench, options, folder / "latency"))
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _delete_topics(bench)


def _warm_up(
    spark: SparkSession,
    settings: Settings,
    name: str,
    options: GeoBenchOptions,
    start_ms: int,
    folder: Path,
    say: Progress,
) -> dict:
    """The geo query over `options.warmup_positions` on topics of their own; its seconds."""
    if not options.warmup_positions:
        return {"warmup_positions": 0, "warmup_seconds": 0.0}
    say(f"warming up: {options.warmup_positions:,} positions on topics of their own")
    warm = _bench_settings(settings, name)
    try:
        _produce_all(warm, simulated(options.warmup_positions, options.vehicles, start_ms))
        figures = _throughput(spark, warm, options, folder / "warmup" / "geo", say)
    finally:
        _delete_topics(warm)
    return {"warmup_positions": figures["positions"], "warmup_seconds": figures["wall_seconds"]}


def _bench_settings(settings: Settings, name: str) -> Settings:
    topics = settings.topics.model_copy(
        update={
            "vehicle_positions": f"{name}.positions",
            "vehicle_cells": f"{name}.cells",
            "late": f"{name}.late",
            "dead_letter": f"{name}.dlq",
        }
    )
    admin = AdminClient(settings.kafka.client_config())
    partitions = settings.topics.vehicle_positions_partitions
    new = [NewTopic(topics.vehicle_positions, partitions, 1)]
    new += [NewTopic(t, 1, 1) for t in (topics.vehicle_cells, topics.late, topics.dead_letter)]
    for future in admin.create_topics(new).values():
        future.result()
    bench = settings.model_copy(update={"topics": topics})
    grant_access(bench)  # the job's user may use the bench's topics
    return bench


def _bench_topics(settings: Settings) -> list[str]:
    t = settings.topics
    return [t.vehicle_positions, t.vehicle_cells, t.late, t.dead_letter]


def _delete_topics(settings: Settings) -> None:
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.delete_topics(_bench_topics(settings)).values():
        with contextlib.suppress(Exception):  # a topic already gone is fine at the end
            future.result(30)


def _producer(settings: Settings) -> Producer:
    return Producer({**settings.kafka.client_config(), "linger.ms": 20, "compression.type": "lz4"})


def _produce_all(settings: Settings, columns: dict[str, np.ndarray]) -> None:
    producer = _producer(settings)
    topic, envelope = settings.topics.vehicle_positions, settings.ingest.envelope
    now_ms = int(time.time() * 1000)
    for i in range(len(columns["t"])):
        key, value = encoded(columns, envelope, i, now_ms)
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def _throughput(
    spark: SparkSession, settings: Settings, options: GeoBenchOptions, checkpoint: Path, say
) -> dict:
    say("the geo query over the preloaded positions (availableNow)")
    run = GeoJobOptions(
        available_now=True,
        checkpoint=checkpoint,
        max_offsets_per_trigger=options.max_offsets_per_trigger,
        query_name=f"bench_geo_{checkpoint.parent.name[-6:]}",
    )
    started = time.perf_counter()
    query = start_geo_query(spark, settings, run)
    query.awaitTermination()
    wall = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the geo query failed: {query.exception()}")
    batches = [QUERY.batch_metrics(p) for p in query.recentProgress if p["numInputRows"]]
    records = sum(b["records_in"] for b in batches)
    seconds = sum(b["duration_s"] for b in batches)
    later = batches[1:]
    later_s = sum(b["duration_s"] for b in later)
    return {
        "positions": records,
        "positions_per_s": round(records / seconds) if seconds else 0,
        "sustained_positions_per_s": (
            round(sum(b["records_in"] for b in later) / later_s) if later_s else None
        ),
        "batches": len(batches),
        "batch_seconds": round(seconds, 2),
        "wall_seconds": round(wall, 2),
        "cell_results": sum(b["cell_results"] for b in batches),
        "late": sum(b["late"] for b in batches),
    }


def _baseline(
    spark: SparkSession, settings: Settings, options: GeoBenchOptions, checkpoint: Path
) -> dict:
    """Positions/s of Spark's own windowed aggregation of the same positions (see module)."""
    resolution = settings.geo.resolution

    @pandas_udf("string")
    def cell(lat: pd.Series, long: pd.Series) -> pd.Series:
        return pd.Series(
            [
                None if pd.isna(a) else h3.latlng_to_cell(a, b, resolution)
                for a, b in zip(lat, long, strict=True)
            ]
        )

    schema = (
        "phenomenonTime long, vehicle string, lat double, long double, speed double, delay double"
    )
    positions = (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options("admin"))
        .option("subscribe", settings.topics.vehicle_positions)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(options.max_offsets_per_trigger))
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("p"))
        .select("p.*")
        .where(F.col("lat").isNotNull())
        .select(
            F.timestamp_millis("phenomenonTime").alias("event_time"),
            cell("lat", "long").alias("cell"),
            "vehicle",
            "speed",
            "delay",
        )
        .withWatermark("event_time", f"{round(settings.geo.disorder_s * 1000)} milliseconds")
    )
    window = F.window("event_time", f"{round(settings.geo.window_s * 1000)} milliseconds")
    cells = positions.groupBy(window, "cell").agg(
        F.approx_count_distinct("vehicle").alias("vehicles"),
        F.count("*").alias("positions"),
        F.avg("speed").alias("mean_speed"),
        F.avg("delay").alias("mean_delay"),
    )
    query = (
        cells.writeStream.format("noop")
        .outputMode("update")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [
        (p["numInputRows"], p["durationMs"]["triggerExecution"] / 1000)
        for p in query.recentProgress
        if p["numInputRows"]
    ]
    return {
        "baseline_positions_per_s": _rate(batches),
        "baseline_sustained_positions_per_s": _rate(batches[1:]) or None,
    }


def _rate(batches: list[tuple[int, float]]) -> int:
    """Rows per second over (rows, seconds) of some batches (0 for none)."""
    seconds = sum(s for _, s in batches)
    return round(sum(r for r, _ in batches) / seconds) if seconds else 0


def _latency(
    spark: SparkSession, settings: Settings, options: GeoBenchOptions, checkpoint: Path
) -> dict:
    """Send positions at `options.rate` with event time now; see the module for the measure."""
    spec = geo_spec(settings)
    run = GeoJobOptions(
        checkpoint=checkpoint, starting_offsets="latest", query_name="bench_geo_latency"
    )
    query = start_geo_query(spark, settings, run)
    seen: list[tuple[float, dict]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_read_results, args=(settings, seen, stop), daemon=True)
    reader.start()
    time.sleep(5)  # the query's first (empty) batches
    count = int(options.rate * options.latency_seconds)
    columns = simulated(count, options.vehicles, 0, seed=2)
    sent = _send_at_rate(settings, columns, options.rate)
    time.sleep(10)  # the last positions' results
    stop.set()
    reader.join(30)
    query.stop()
    latencies = _latencies(sent, seen, spec.resolution, spec.window_ms)
    if not len(latencies):
        return {"latency_p50_s": None, "latency_p99_s": None, "latency_positions": 0}
    return {
        "latency_p50_s": round(float(np.percentile(latencies, 50)), 3),
        "latency_p99_s": round(float(np.percentile(latencies, 99)), 3),
        "latency_positions": len(latencies),
        "latency_rate": options.rate,
    }


def _send_at_rate(settings: Settings, columns: dict[str, np.ndarray], rate: float) -> dict:
    """Send the positions at `rate`, each with event time = its sending time; returns the sent
    positions' columns with `t` and `sent` (wall seconds)."""
    producer = _producer(settings)
    topic, envelope = settings.topics.vehicle_positions, settings.ingest.envelope
    count = len(columns["t"])
    sent = np.zeros(count)
    begin = time.time()
    for i in range(count):
        due = begin + i / rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        now = time.time()
        columns["t"][i] = int(now * 1000)
        key, value = encoded(columns, envelope, i, int(now * 1000))
        producer.produce(topic, key=key, value=value)
        sent[i] = now
        producer.poll(0)
    producer.flush(30)
    return {**columns, "sent": sent}


def _read_results(settings: Settings, seen: list, stop: threading.Event) -> None:
    consumer = Consumer(
        {
            **settings.kafka.client_config(),
            "group.id": f"bench-geo-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([settings.topics.vehicle_cells])
    try:
        while not stop.is_set():
            for message in consumer.consume(1000, 0.2):
                if message.error() is None:
                    seen.append((time.time(), orjson.loads(message.value())))
    finally:
        consumer.close()


def _latencies(sent: dict, seen: list, resolution: int, window_ms: int) -> np.ndarray:
    """Per sent position with a fix: seconds until a result counting it was seen."""
    cells = assign_cells(sent["lat"], sent["long"], resolution)
    fix = cells != 0
    names = cell_names(cells[fix])
    starts = (sent["t"][fix] // window_ms * window_ms).tolist()
    rank: dict[tuple, int] = {}
    needed = []
    for key in zip(names, starts, strict=True):
        rank[key] = rank.get(key, 0) + 1
        needed.append((key, rank[key]))
    first_seen: dict[tuple, list[tuple[int, float]]] = {}
    for at, result in seen:
        key = (result["cell"], result["window_start"])
        first_seen.setdefault(key, []).append((result["positions"], at))
    latencies = []
    for (key, need), sent_at in zip(needed, sent["sent"][fix].tolist(), strict=True):
        times = [at for positions, at in first_seen.get(key, []) if positions >= need]
        if times:
            latencies.append(min(times) - sent_at)
    return np.array(latencies)
