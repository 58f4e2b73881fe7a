"""The InfluxDB sink on real Kafka, real Spark and the real InfluxDB.

Each test writes its own topics and its own InfluxDB database, then compares what InfluxDB holds,
queried back, with the records it produced: every point once, with its values; bad records in the
dead-letter topic with their reason; and across an InfluxDB restart nothing lost or doubled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS
from statestream.config import Settings
from statestream.queries.sink_influx.job import (
    InfluxSinkOptions,
    SinkBatchReport,
    start_influx_sink_query,
)
from statestream.services import start_services, stop_services
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.support import granted, influx_query, read_committed

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "src/statestream/data/machine_events.jsonl"
NOT_QUANTITIES = {"Thing", "Timestamp", "id"}


@pytest.fixture
def sink_settings(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """Settings whose sink topics and InfluxDB database belong to this test alone."""
    topics = local_services.topics.model_copy(
        update={
            "machine_data": f"{unique_name}.data",
            "machine_out": f"{unique_name}.out",
            "stats": f"{unique_name}.stats",
            "alerts": f"{unique_name}.alerts",
            "dead_letter": f"{unique_name}.dlq",
            "vehicle_cells": f"{unique_name}.cells",
            "machine_quantities": f"{unique_name}.quantities",
        }
    )
    names = [topics.machine_data, topics.machine_out, topics.stats, topics.alerts]
    names += [topics.vehicle_cells, topics.machine_quantities]
    admin = AdminClient(local_services.kafka.client_config())
    new = [NewTopic(n, 2, 1) for n in names] + [NewTopic(topics.dead_letter, 1, 1)]
    for future in admin.create_topics(new).values():
        future.result()
    influx = local_services.influx.model_copy(update={"database": unique_name})
    settings = granted(local_services.model_copy(update={"topics": topics, "influx": influx}))
    yield settings
    influx_query(settings, f'DROP DATABASE "{unique_name}"', database=None)
    for future in admin.delete_topics([*names, topics.dead_letter]).values():
        future.result(30)  # before the process may end and drop the request


def _sample_records(rows: int) -> list[dict]:
    """The first `rows` rows of the sample as narrow machine records."""
    records = []
    for raw in SAMPLE.read_text().splitlines()[:rows]:
        row = json.loads(raw)
        for quantity, value in row.items():
            if quantity not in NOT_QUANTITIES:
                records.append(
                    {
                        "thing": row["Thing"],
                        "quantity": quantity,
                        "phenomenonTime": row["Timestamp"],
                        "result": value,
                    }
                )
    return records


def _pair(thing: str, t_left: int, t_right: int, speed: float, torque: float) -> dict:
    return {
        "thing": thing,
        "quantity": "vaPower_C11",
        "phenomenonTime": (t_left + t_right) / 2,
        "result": speed * torque,
        "left": {"quantity": "actSpeed_C11", "phenomenonTime": t_left, "result": speed},
        "right": {"quantity": "vaTorque_C11", "phenomenonTime": t_right, "result": torque},
    }


def _levels(thing: str, start: int, seconds: list[float]) -> dict:
    levels = dict(zip(("0-20", "20-40", "40-60", "60-80", "80-100"), seconds, strict=True))
    return {
        "thing": thing,
        "component": "C11",
        "kind": "levels",
        "window_start": start,
        "window_end": start + 60_000,
        "level_seconds": levels,
    }


def _duty(thing: str, start: int, duty_cycle: float, alert: bool = False) -> dict:
    record = {
        "thing": thing,
        "component": "C11",
        "kind": "duty_cycle",
        "window_start": start,
        "window_end": start + 600_000,
        "duty_cycle": duty_cycle,
    }
    return {**record, "limit": 0.4} if alert else record


def _produce(settings: Settings, topic: str, values: list[dict | bytes]) -> None:
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for value in values:
        if isinstance(value, dict):
            key = f"{value['thing']}.{value.get('quantity') or value['component']}"
            producer.produce(topic, key=key, value=json.dumps(value))
        else:
            producer.produce(topic, key=b"bad", value=value)
    producer.flush(30)


def _produce_aborted(settings: Settings, topic: str, values: list[dict]) -> None:
    """Records of a transaction that is aborted: a read_committed reader never sees them."""
    producer = Producer({**settings.kafka.client_config(), "transactional.id": f"{topic}.abort"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=json.dumps(value))
    producer.flush(30)
    producer.abort_transaction(30)


def _run(
    spark, settings: Settings, name: str, checkpoint: Path, **options
) -> list[SinkBatchReport]:
    query = start_influx_sink_query(
        spark,
        settings,
        InfluxSinkOptions(available_now=True, query_name=name, checkpoint=checkpoint, **options),
    )
    query.awaitTermination(150)
    assert not query.isActive, "the sink did not finish"
    assert query.exception() is None
    return _reports(query)


def _reports(query) -> list[SinkBatchReport]:
    return [SinkBatchReport.of(json.loads(progress.json)) for progress in query.recentProgress]


def test_the_sink_writes_exactly_the_records_of_each_topic(
    spark, sink_settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    topics = sink_settings.topics
    data = _sample_records(200)
    pairs = [_pair("R0815", 1000 * i, 1000 * i + 1, 300.0 + i, -4.5 + i / 10) for i in range(40)]
    stats = [_levels("R0815", 60_000 * i, [10.0, 20.0, 0.0, 0.0, 30.0]) for i in range(5)]
    stats += [_duty("R0815", 60_000 * i, 0.1 * i) for i in range(5)]
    refined = _levels("R0815", 0, [0.0, 0.0, 0.0, 0.0, 60.0])  # a late refinement of window 0
    alerts = [_duty("R0815", 60_000 * i, 0.45 + i / 100, alert=True) for i in range(3)]
    bad = [b"not json", b'{"thing": "R0815", "quantity": "q", "result": 1.0}', b'{"thing": 1}']
    kinds = bad_values(data[0], time_field="phenomenonTime", number_field="result")
    _produce(sink_settings, topics.machine_data, [*data, *data[:50], bad[0], bad[1]])
    _produce(sink_settings, topics.machine_out, list(kinds.values()))
    _produce_aborted(sink_settings, topics.machine_data, [{**data[0], "result": 999.0}])
    _produce(sink_settings, topics.machine_out, pairs)
    _produce(sink_settings, topics.stats, [*stats, bad[2], refined])
    _produce(sink_settings, topics.alerts, alerts)

    reports = _run(spark, sink_settings, unique_name, tmp_path, max_offsets_per_trigger=150)

    stored = influx_query(sink_settings, "SELECT * FROM machine_data")
    assert len(stored) == len(data)
    assert {(r["time"], r["thing"], r["quantity"], r["result"]) for r in stored} == {
        (d["phenomenonTime"] * 1000, d["thing"], d["quantity"], d["result"]) for d in data
    }
    out = influx_query(sink_settings, "SELECT * FROM machine_out")
    assert sorted(
        (r["time"], r["result"], r["left_time"], r["right_result"]) for r in out
    ) == sorted(
        (
            round(p["phenomenonTime"] * 1000),
            p["result"],
            p["left"]["phenomenonTime"],
            p["right"]["result"],
        )
        for p in pairs
    )
    levels = influx_query(sink_settings, "SELECT * FROM machine_stats WHERE kind = 'levels'")
    assert len(levels) == 5 * 5
    window0 = {r["level"]: r["seconds"] for r in levels if r["time"] == 0}
    assert window0 == {"0-20": 0.0, "20-40": 0.0, "40-60": 0.0, "60-80": 0.0, "80-100": 60.0}
    duty = influx_query(sink_settings, "SELECT * FROM machine_stats WHERE kind = 'duty_cycle'")
    assert sorted((r["time"], r["duty_cycle"], r["window_end"]) for r in duty) == [
        (60_000_000 * i, 0.1 * i, 60_000 * i + 600_000.0) for i in range(5)
    ]
    stored_alerts = influx_query(sink_settings, "SELECT * FROM machine_alerts")
    assert sorted((r["time"], r["duty_cycle"], r["limit"]) for r in stored_alerts) == [
        (60_000_000 * i, 0.45 + i / 100, 0.4) for i in range(3)
    ]

    letters = [json.loads(v) for v in read_committed(sink_settings, topics.dead_letter)]
    dead = assert_each_dead_lettered(letters, kinds, "sink_influx")
    assert sorted(d["raw"].encode() for d in dead) == sorted(bad)
    reasons = {d["raw"]: d["reason"] for d in dead}
    assert reasons["not json"].startswith("bad JSON")
    assert "phenomenonTime" in reasons[bad[1].decode()]
    assert all(d["source_topic"] in (topics.machine_data, topics.stats) for d in dead)
    assert all(d["stage"] == "sink_influx" and list(d) == list(DEAD_LETTER_FIELDS) for d in dead)
    assert sum(r.bad_records for r in reports) == len(bad) + len(kinds)
    produced = len(data) + 50 + 2 + len(pairs) + len(kinds) + len(stats) + 2 + len(alerts)
    assert sum(r.records for r in reports) == produced
    assert len(reports) > 1, "max_offsets_per_trigger should have made several batches"


def test_a_batch_spark_replays_doubles_nothing(
    spark, sink_settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    """Spark runs a batch again when its commit is missing (a crash before it): same points."""
    data = _sample_records(30)
    _produce(sink_settings, sink_settings.topics.machine_data, [*data, b"not json"])
    first = _run(spark, sink_settings, unique_name, tmp_path)
    last = first[-1].batch_id
    for commit in (tmp_path / "commits").glob(f"*{last}*"):
        commit.unlink()  # as if the process died after writing, before Spark's commit
    replayed = _run(spark, sink_settings, unique_name, tmp_path)
    assert [r.batch_id for r in replayed] == [last]
    assert replayed[0].points == first[-1].points > 0
    count = influx_query(sink_settings, "SELECT count(result) FROM machine_data")
    assert count[0]["count"] == len(data)
    dead = read_committed(sink_settings, sink_settings.topics.dead_letter)
    assert [json.loads(v)["raw"] for v in dead] == ["not json"]


def test_an_influxdb_restart_loses_and_doubles_nothing(
    spark, local_services: Settings, sink_settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    """InfluxDB stops between two runs of the sink: the next batch's tasks wait for it (their
    retries counted), no batch is committed meanwhile, and once it is back all points are there,
    once each."""
    data = _sample_records(1000)
    sink = sink_settings.influx_sink.model_copy(update={"retry_initial_s": 0.2, "retry_max_s": 1})
    settings = sink_settings.model_copy(update={"influx_sink": sink})
    _produce(settings, settings.topics.machine_data, data[:500])
    _run(spark, settings, unique_name, tmp_path)
    _produce(settings, settings.topics.machine_data, data[500:])
    options = InfluxSinkOptions(available_now=True, query_name=unique_name, checkpoint=tmp_path)
    stop_services(local_services, names={"influxdb"})
    try:
        query = start_influx_sink_query(spark, settings, options)
        time.sleep(6.0)  # the batch's tasks wait and retry: the query does not move on
        assert query.isActive and not query.recentProgress, "a batch committed without InfluxDB"
    finally:
        start_services(local_services)  # InfluxDB is shared: it runs again whatever happened
    query.awaitTermination(150)
    assert not query.isActive and query.exception() is None
    reports = _reports(query)
    assert sum(r.retries for r in reports) > 0
    assert sum(r.records for r in reports) == len(data) - 500  # the second run's records
    stored = influx_query(settings, "SELECT * FROM machine_data")
    assert len(stored) == len(data)
    assert {(r["time"], r["thing"], r["quantity"], r["result"]) for r in stored} == {
        (d["phenomenonTime"] * 1000, d["thing"], d["quantity"], d["result"]) for d in data
    }
