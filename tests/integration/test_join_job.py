"""The streaming join on real Kafka and real Spark equals the offline join (--no-flush)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.chaos.checkpoints import checkpoint_size
from statestream.codecs.bad_input import DEAD_LETTER_FIELDS, LATE_FIELDS
from statestream.codecs.formats import RecordColumns, parse_line
from statestream.config import Settings
from statestream.jobs.status import STOPPED, QueryStatus, read_statuses, status_folder
from statestream.join import SpecTemplate
from statestream.offline_join import join_lines
from statestream.queries.join.job import JoinJobOptions, start_join_query
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.support import close_wait_sockets, granted, read_committed

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "src/statestream/data/machine_events.jsonl"


def _narrow_lines(order: str, rows: int | None = None) -> list[bytes]:
    """The sample as narrow records (one per quantity), in file or per-thing time order."""
    lines = SAMPLE.read_bytes().splitlines()[:rows]
    if order == "time":
        lines.sort(key=lambda raw: (json.loads(raw)["Thing"], json.loads(raw)["Timestamp"]))
    columns = RecordColumns()
    for number, raw in enumerate(lines, 1):
        parse_line(raw, number, columns)
    return [
        json.dumps({"thing": th, "quantity": q, "phenomenonTime": t, "result": v}).encode()
        for th, q, t, v in zip(
            columns.things, columns.quantities, columns.times, columns.values, strict=True
        )
    ]


def _topic_settings(settings: Settings, name: str, partitions: int) -> Settings:
    topics = settings.topics.model_copy(
        update={
            "machine_data": f"{name}.in",
            "machine_out": f"{name}.out",
            "late": f"{name}.late",
            "dead_letter": f"{name}.dlq",
        }
    )
    admin = AdminClient(settings.kafka.client_config())
    names = [topics.machine_data, topics.machine_out, topics.late, topics.dead_letter]
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def _produce(settings: Settings, lines: list[bytes]) -> None:
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for raw in lines:
        record = json.loads(raw)
        producer.produce(
            settings.topics.machine_data, key=f"{record['thing']}.{record['quantity']}", value=raw
        )
    producer.flush(30)


def _read_json(settings: Settings, topic: str) -> list[dict]:
    return [json.loads(value) for value in read_committed(settings, topic)]


def _pair_key(pair: dict) -> tuple:
    left, right = pair["left"], pair["right"]
    return (
        pair["thing"],
        pair["quantity"],
        left["phenomenonTime"],
        left["result"],
        right["phenomenonTime"],
        right["result"],
    )


def _offline(lines: list[bytes], template: SpecTemplate) -> tuple[list[dict], int]:
    quantities = {json.loads(raw)["quantity"] for raw in lines}
    out, late = io.StringIO(), io.StringIO()
    summary = join_lines(
        (raw + b"\n" for raw in lines),
        template.specs_for(sorted(quantities)),
        out,
        lambda: late,
        flush=False,
    )
    return [json.loads(text) for text in out.getvalue().splitlines()], summary.late


CASES = [
    # (order, rows of the sample, disorder, maxOffsetsPerTrigger, partitions)
    ("time", None, 0.0, 1000, 5),
    ("file", None, 120.0, 1000, 3),
    ("file", 40, 120.0, 7, 5),
    ("time", 6, 0.0, 1, 3),
]


@pytest.mark.parametrize(("order", "rows", "disorder", "max_offsets", "partitions"), CASES)
def test_streaming_join_equals_offline_join(
    spark,
    local_services: Settings,
    unique_name: str,
    order,
    rows,
    disorder,
    max_offsets,
    partitions,
) -> None:
    settings = _topic_settings(local_services, unique_name, partitions)
    lines = _narrow_lines(order, rows)
    _produce(settings, lines)
    template = SpecTemplate(disorder=disorder)
    driver = spark.sparkContext._gateway.proc.pid
    sockets_before = close_wait_sockets(driver)
    query = start_join_query(
        spark,
        settings,
        JoinJobOptions(
            available_now=True,
            max_offsets_per_trigger=max_offsets,
            query_name=unique_name,
            templates=(template,),
        ),
    )
    query.awaitTermination()
    assert query.exception() is None
    # each task's state server socket is closed again (PySpark 4.1.3 kept one per task: a
    # pipeline ran out of file descriptors after an hour at 2,000 rows/s, SPARK-58932)
    assert close_wait_sockets(driver) - sockets_before < partitions
    expected_pairs, expected_late = _offline(lines, template)
    got = _read_json(settings, settings.topics.machine_out)
    assert len(got) == len({_pair_key(p) for p in got}), "a pair arrived twice"
    assert {_pair_key(p) for p in got} == {_pair_key(p) for p in expected_pairs}
    late = _read_json(settings, settings.topics.late)
    assert len(late) == expected_late
    assert all(record["reason"] == "late" and record["stage"] == "join" for record in late)
    assert all(set(LATE_FIELDS) <= record.keys() and "series" in record for record in late)
    assert all(r["source_topic"] == settings.topics.machine_data for r in late)
    metrics = [
        p["observedMetrics"]["join_metrics"]
        for p in query.recentProgress
        if p.get("observedMetrics")
    ]
    assert sum(m["records_in"] for m in metrics) == len(lines)
    assert sum(m["pairs_out"] for m in metrics) == len(got)
    reported = _finished_status(settings, unique_name)
    assert reported.totals["records_in"] == len(lines)
    assert reported.totals["pairs_out"] == len(got)
    assert reported.state_rows is not None and reported.state_rows > 0
    checkpoint = settings.checkpoint_root / unique_name  # changelogs, logs: no Hadoop .crc files
    assert list(checkpoint.rglob("*.changelog"))
    assert not [*checkpoint.rglob(".*.changelog.crc"), *checkpoint.glob("offsets/.*.crc")]
    # a soak reads Spark's layout: every batch of the run still there, its newest alone smaller
    newest = max(progress["batchId"] for progress in query.recentProgress)
    size = checkpoint_size(checkpoint, retained=1)
    assert size.batches == newest + 1
    assert size.window_bytes < size.bytes if newest else size.window_bytes == size.bytes


def _finished_status(settings: Settings, name: str, timeout_s: float = 20.0) -> QueryStatus:
    """The status `statestream status` would show for the finished run of query `name`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:  # the listener hears of the end asynchronously
        runs = read_statuses(status_folder(settings), include_finished=True)
        finished = [s for s in runs if s.name == name and s.state == STOPPED]
        if finished:
            return finished[0]
        time.sleep(0.2)
    raise AssertionError(f"no finished status of {name}")


def test_malformed_records_go_to_the_dead_letter_topic(
    spark, local_services: Settings, unique_name: str
) -> None:
    settings = _topic_settings(local_services, unique_name, 2)
    good = _narrow_lines("time", 10)
    record = b'{"thing": "R0815", "quantity": "vaTorque_C11", "phenomenonTime": 5, "result": 1}'
    bad = [
        b"{not json",
        b'{"thing": "R0815", "quantity": "actSpeed_C11", "phenomenonTime": "soon", "result": 1}',
        b'{"quantity": "vaTorque_C11", "phenomenonTime": 5, "result": 1.0}',
        b'{"thing": "R0815", "quantity": "vaTorque_C11", "phenomenonTime": 5, "result": "x"}',
        record,  # without a key
        record.replace(b"R0815", b"R0816"),  # under R0815.vaTorque_C11
    ]
    template = {"thing": "R0815", "quantity": "vaTorque_C11", "phenomenonTime": 5, "result": 1}
    kinds = bad_values(template, time_field="phenomenonTime", number_field="result")
    producer = Producer(settings.kafka.client_config())
    for raw in bad:
        key = b"R0815.vaTorque_C11" if raw == bad[-1] else None
        producer.produce(settings.topics.machine_data, key=key, value=raw)
    for raw in kinds.values():
        producer.produce(settings.topics.machine_data, key=b"R0815.vaTorque_C11", value=raw)
    producer.flush(30)
    _produce(settings, good)
    query = start_join_query(
        spark, settings, JoinJobOptions(available_now=True, query_name=unique_name)
    )
    query.awaitTermination()
    assert query.exception() is None
    dead = assert_each_dead_lettered(
        _read_json(settings, settings.topics.dead_letter), kinds, "join"
    )
    assert sorted(d["raw"].encode() for d in dead) == sorted(bad)
    reasons = {d["raw"]: d["reason"] for d in dead}
    assert "bad JSON" in reasons["{not json"]
    assert reasons[bad[1].decode()] == "phenomenonTime is not a number: 'soon'"
    assert reasons[bad[4].decode()] == (
        "no key: a record's key is its thing.quantity, here R0815.vaTorque_C11"
    )
    assert reasons[bad[5].decode()] == (
        "key 'R0815.vaTorque_C11' is not the record's thing.quantity R0816.vaTorque_C11"
    )
    assert all(d["source_topic"] == settings.topics.machine_data for d in dead)
    assert all(d["stage"] == "join" and list(d) == list(DEAD_LETTER_FIELDS) for d in dead)
    assert {_pair_key(p) for p in _read_json(settings, settings.topics.machine_out)} == {
        _pair_key(p) for p in _offline(good, SpecTemplate())[0]
    }
