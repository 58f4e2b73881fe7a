"""The InfluxDB sink writes the quantity statistics' windows as measurement machine_quantities:
tags thing and quantity, the statistics as fields, the window start as time; a refined window
replaces its point, a null field is left out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.queries.quantity_stats.records import Record, window_records
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.queries.quantity_stats.windows import QuantityWindows
from statestream.queries.sink_influx.job import (
    InfluxSinkOptions,
    SinkBatchReport,
    sink_streams,
    start_influx_sink_query,
)
from tests.support import granted, influx_query, read_committed

pytestmark = pytest.mark.integration

BASE_MS = 1_554_096_000_000
SPEC = QuantitySpec(window_ms=10_000, out_of_orderness_ms=0, allowed_lateness_ms=20_000)
THING = "R 08,15"  # a tag value that needs escaping
FIELDS = ("count", "last", "max", "mean", "min", "window_end")


@pytest.fixture
def sink_settings(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """Settings whose sink topics and InfluxDB database belong to this test alone."""
    update = {
        "machine_data": f"{unique_name}.data",
        "machine_out": f"{unique_name}.out",
        "stats": f"{unique_name}.stats",
        "alerts": f"{unique_name}.alerts",
        "vehicle_cells": f"{unique_name}.cells",
        "machine_quantities": f"{unique_name}.quantities",
        "dead_letter": f"{unique_name}.dlq",
    }
    topics = local_services.topics.model_copy(update=update)
    admin = AdminClient(local_services.kafka.client_config())
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in update.values()]).values():
        future.result()
    influx = local_services.influx.model_copy(update={"database": unique_name})
    settings = granted(local_services.model_copy(update={"topics": topics, "influx": influx}))
    assert sink_streams(settings)[topics.machine_quantities] == "machine_quantities"
    yield settings
    influx_query(settings, f'DROP DATABASE "{unique_name}"', database=None)
    for future in admin.delete_topics(list(update.values())).values():
        future.result(30)


def _windows() -> tuple[list[Record], list[Record]]:
    """Window records as the query writes them, for a first run of the sink and a second: a
    window written and refined in one batch, one refined in the next run, a null mean."""
    temperature = QuantityWindows(SPEC)
    t, v = BASE_MS + np.arange(36.0) * 1000, np.arange(36.0) * 0.5 - 4

    def written(series: QuantityWindows, quantity: str, times, values) -> list[Record]:
        step = series.process(np.asarray(times, dtype=float), np.asarray(values, dtype=float))
        return window_records(THING, quantity, step, SPEC)

    first = written(temperature, "temperature", t[:16], v[:16])  # [0 s, 10 s)
    # 5.0005 s comes late, but within the allowed lateness: [0 s, 10 s) again; up to 30 s
    first += written(temperature, "temperature", [BASE_MS + 5_000.5, *t[16:]], [-50, *v[16:]])
    huge = [BASE_MS, BASE_MS + 1000, BASE_MS + 10_000]  # a sum beyond the float range
    first += written(QuantityWindows(SPEC), "load", huge, [1.7e308, 1.7e308, 0.0])
    second = written(temperature, "temperature", [BASE_MS + 25_000], [99.0])  # [20 s, 30 s)
    return first, second


def _produce(settings: Settings, records: list[tuple[str, str | bytes]]) -> None:
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for key, value in records:
        producer.produce(settings.topics.machine_quantities, key=key, value=value)
    assert producer.flush(30) == 0


def _run(spark, settings: Settings, name: str, checkpoint: Path) -> list[SinkBatchReport]:
    query = start_influx_sink_query(
        spark,
        settings,
        InfluxSinkOptions(
            available_now=True, query_name=name, checkpoint=checkpoint, database=name
        ),
    )
    query.awaitTermination(150)
    assert not query.isActive, "the sink did not finish"
    assert query.exception() is None
    return [SinkBatchReport.of(json.loads(p.json)) for p in query.recentProgress]


def test_the_sink_writes_the_latest_window_of_each_key(
    spark, sink_settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    first, second = _windows()
    assert [json.loads(v)["window_start"] - BASE_MS for _, v in first] == [0, 0, 10_000, 20_000, 0]
    assert json.loads(first[-1][1])["mean"] is None  # overflowed: null
    all_null = dict.fromkeys(FIELDS)
    bad = json.dumps({"thing": THING, "quantity": "x", "window_start": BASE_MS, **all_null})
    _produce(sink_settings, [*first, ("bad", bad)])
    reports = _run(spark, sink_settings, unique_name, tmp_path)
    _produce(sink_settings, second)
    reports += _run(spark, sink_settings, unique_name, tmp_path)

    stored = influx_query(sink_settings, "SELECT * FROM machine_quantities", database=unique_name)
    got = {(r["time"], r["thing"], r["quantity"]): tuple(r[f] for f in FIELDS) for r in stored}
    assert len(got) == len(stored) == 4
    latest = {key: json.loads(value) for key, value in [*first, *second]}
    expected = {
        (w["window_start"] * 1000, w["thing"], w["quantity"]): tuple(w[f] for f in FIELDS)
        for w in latest.values()
    }
    assert got == expected
    start = (BASE_MS * 1000, THING)
    assert got[(*start, "temperature")] == (11, 0.5, 0.5, -67.5 / 11, -50.0, BASE_MS + 10_000)
    assert got[(*start, "load")] == (2, 1.7e308, 1.7e308, None, 1.7e308, BASE_MS + 10_000)
    refined = got[(start[0] + 20_000_000, THING, "temperature")]
    assert refined[0] == 11 and refined[2] == 99.0  # the second run's refinement

    letters = [
        json.loads(v) for v in read_committed(sink_settings, sink_settings.topics.dead_letter)
    ]
    assert [(d["raw"], d["stage"]) for d in letters] == [(bad, "sink_influx")]
    assert "none of the fields" in letters[0]["reason"]
    assert sum(r.records for r in reports) == len(first) + 1 + len(second)
    assert sum(r.bad_records for r in reports) == 1
