"""What the quantity statistics integration tests share: topics, machine records, the windows
read back and the windows the plain reference expects."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pandas as pd
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.queries.quantity_stats.reference import reference_quantity_stats
from statestream.queries.quantity_stats.spec import QuantitySpec
from tests.support import granted, read_committed

WindowKey = tuple[str, str, int]  # (thing, quantity, window_start)
Stats = tuple[int, float, float, float, float]  # (count, min, max, mean, last)
TOPICS = ("machine_data", "machine_quantities", "late", "dead_letter")


def quantity_topic_settings(settings: Settings, name: str, partitions: int = 3) -> Settings:
    """Settings whose topics are new ones named after `name`; machine_data has `partitions`,
    the output topics one each (so that their order is the order they were written in)."""
    topics = settings.topics.model_copy(
        update={
            "machine_data": f"{name}.in",
            "machine_quantities": f"{name}.quantities",
            "late": f"{name}.late",
            "dead_letter": f"{name}.dlq",
        }
    )
    admin = AdminClient(settings.kafka.client_config())
    new = [NewTopic(topics.machine_data, partitions, 1)]
    new += [NewTopic(getattr(topics, t), 1, 1) for t in TOPICS[1:]]
    for future in admin.create_topics(new).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def topic_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a child process the same topics."""
    return {f"STATESTREAM_TOPICS__{n.upper()}": getattr(settings.topics, n) for n in TOPICS}


def record_value(thing: str, quantity: str, t: float, v: float) -> bytes:
    return json.dumps(
        {"thing": thing, "quantity": quantity, "phenomenonTime": t, "result": v}
    ).encode()


def produce_records(settings: Settings, frame: pd.DataFrame) -> list[tuple[int, int]]:
    """`frame` (thing, quantity, t, v) onto machine_data in order, keyed `thing.quantity`, with
    an idempotent producer; returns the (partition, offset) of each row."""
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    where: dict[int, tuple[int, int]] = {}

    def delivered(row: int):
        def report(error, message) -> None:
            assert error is None, error
            where[row] = (message.partition(), message.offset())

        return report

    for row, record in enumerate(frame.itertuples(index=False)):
        producer.produce(
            settings.topics.machine_data,
            key=f"{record.thing}.{record.quantity}",
            value=record_value(record.thing, record.quantity, record.t, record.v),
            on_delivery=delivered(row),
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    return [where[row] for row in range(len(frame))]


def read_json(settings: Settings, topic: str) -> list[dict]:
    """The JSON values of `topic` as a read_committed consumer sees them, in topic order."""
    return [json.loads(value) for value in read_committed(settings, topic)]


def window_key(result: dict) -> WindowKey:
    return (result["thing"], result["quantity"], result["window_start"])


def window_stats(result: dict) -> Stats:
    return (result["count"], result["min"], result["max"], result["mean"], result["last"])


def latest_windows(results: list[dict]) -> dict[WindowKey, Stats]:
    """The latest result of each window, in topic order (a later record refines an earlier)."""
    return {window_key(r): window_stats(r) for r in results}


def repeated_keys(results: list[dict]) -> list[WindowKey]:
    return [key for key, n in Counter(window_key(r) for r in results).items() if n > 1]


def reference_emissions(frame: pd.DataFrame, spec: QuantitySpec) -> dict[WindowKey, list[Stats]]:
    """Every emission of every window by the plain reference, each series' records taken in
    the order of `frame` (the order they were produced in)."""
    emitted: dict[WindowKey, list[Stats]] = defaultdict(list)
    for (thing, quantity), rows in frame.groupby(["thing", "quantity"], sort=False):
        outcome = reference_quantity_stats(rows["t"].tolist(), rows["v"].tolist(), spec)
        for w in outcome.emitted:
            emitted[(thing, quantity, w.start)].append((w.count, w.min, w.max, w.mean, w.last))
    return dict(emitted)


def reference_latest(frame: pd.DataFrame, spec: QuantitySpec) -> dict[WindowKey, Stats]:
    """The reference's latest emission of each window."""
    return {key: values[-1] for key, values in reference_emissions(frame, spec).items()}


def assert_written_as_the_reference(results: list[dict], frame: pd.DataFrame, spec) -> None:
    """The latest result of each window is the reference's, exactly, and no window is missing;
    a window is written at most as often as the reference emits it, each time with a value the
    reference emitted (a query call emits the state its last record left)."""
    emissions = reference_emissions(frame, spec)
    got = latest_windows(results)
    assert sorted(got) == sorted(emissions), "windows missing or too many"
    assert got == {key: values[-1] for key, values in emissions.items()}
    written = Counter(window_key(r) for r in results)
    assert {k: n for k, n in written.items() if n > len(emissions[k])} == {}
    assert all(window_stats(r) in emissions[window_key(r)] for r in results)
    assert all(r["window_end"] == r["window_start"] + spec.window_ms for r in results)
