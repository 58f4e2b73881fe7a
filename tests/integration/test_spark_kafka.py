"""Spark Structured Streaming reads one Kafka topic and writes another: every record arrives."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings
from tests.integration.test_kafka import consume

pytestmark = pytest.mark.integration


def test_kafka_to_kafka_query(
    local_services: Settings, spark: SparkSession, unique_name: str, tmp_path: Path
) -> None:
    source, sink = f"{unique_name}.in", f"{unique_name}.out"
    admin = AdminClient(local_services.kafka.client_config())
    for future in admin.create_topics([NewTopic(source, 3), NewTopic(sink, 2)]).values():
        future.result(timeout=30)
    producer = Producer(local_services.kafka.client_config())
    sent = {f"R{i % 7}.q{i % 5}#{i}": f"{i}" for i in range(2000)}
    for key, value in sent.items():
        producer.produce(source, key=key, value=value)
    assert producer.flush(30) == 0

    query = (
        spark.readStream.format("kafka")
        .options(**local_services.kafka.spark_options("admin"))
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select(
            "key", (F.col("value").cast("string").cast("long") * 2).cast("string").alias("value")
        )
        .writeStream.queryName(f"{unique_name}_copy")
        .format("kafka")
        .options(**local_services.kafka.spark_options("admin"))
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert not query.isActive
    assert query.exception() is None

    received = consume(local_services, sink, len(sent))
    assert {m.key().decode(): m.value().decode() for m in received} == {
        key: str(int(value) * 2) for key, value in sent.items()
    }
    assert len(received) == len(sent)
