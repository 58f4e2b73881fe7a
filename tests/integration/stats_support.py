"""What the statistics integration tests share: topics, power records, reading the results."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from tests.support import granted, read_committed

WindowKey = tuple[str, str, str, int]  # (thing, component, kind, window_start)


def stats_topic_settings(settings: Settings, name: str, partitions: int) -> Settings:
    """Settings whose topics are new ones named after `name`; the power input has `partitions`."""
    topics = settings.topics.model_copy(
        update={
            "machine_data": f"{name}.in",
            "machine_out": f"{name}.out",
            "stats": f"{name}.stats",
            "alerts": f"{name}.alerts",
            "late": f"{name}.late",
            "dead_letter": f"{name}.dlq",
        }
    )
    admin = AdminClient(settings.kafka.client_config())
    new = [
        NewTopic(topics.machine_data, partitions, 1),
        NewTopic(topics.machine_out, partitions, 1),
    ]
    new += [
        NewTopic(t, 1, 1) for t in (topics.stats, topics.alerts, topics.late, topics.dead_letter)
    ]
    for future in admin.create_topics(new).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def topic_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a child process the same topics."""
    names = ("machine_data", "machine_out", "stats", "alerts", "late", "dead_letter")
    return {f"STATESTREAM_TOPICS__{n.upper()}": getattr(settings.topics, n) for n in names}


def pair_value(thing: str, component: str, t: float, power: float) -> bytes:
    """A joined power pair as the join writes it (the statistics read four of its fields)."""
    return json.dumps(
        {
            "thing": thing,
            "quantity": f"vaPower_{component}",
            "phenomenonTime": t,
            "result": power,
            "left": {"quantity": f"actSpeed_{component}", "phenomenonTime": t, "result": 1.0},
            "right": {"quantity": f"vaTorque_{component}", "phenomenonTime": t, "result": power},
        }
    ).encode()


def produce_power(settings: Settings, records: pd.DataFrame) -> None:
    """`records` (thing, component, t, power) onto machine.out, in order, keyed as the join."""
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for row in records.itertuples(index=False):
        producer.produce(
            settings.topics.machine_out,
            key=f"{row.thing}.vaPower_{row.component}",
            value=pair_value(row.thing, row.component, row.t, row.power),
        )
    producer.flush(30)


def read_json(settings: Settings, topic: str) -> list[dict]:
    return [json.loads(value) for value in read_committed(settings, topic)]


def window_key(result: dict) -> WindowKey:
    return (result["thing"], result["component"], result["kind"], result["window_start"])


def repeated_keys(results: list[dict]) -> list[WindowKey]:
    return [key for key, n in Counter(window_key(r) for r in results).items() if n > 1]
