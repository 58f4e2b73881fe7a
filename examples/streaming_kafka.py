"""The complement join of a Kafka topic of your own schema, streaming, written exactly once.

The input topic holds JSON records `{"machine": "M1", "ts": <epoch ms>, "signal": "speed",
"value": 1.5}`, keyed `machine.signal` (so that a series stays in one partition, in order); the
query joins each machine's speed and torque into power pairs and writes them to the output topic
with statestream's exactly-once Kafka writer:

    python examples/streaming_kafka.py INPUT_TOPIC OUTPUT_TOPIC CHECKPOINT [--available-now]

Kafka is reached with statestream's settings (`statestream config show`), as the jobs' user; on
the local brokers, let it use your topics first: `statestream topics grant INPUT_TOPIC
OUTPUT_TOPIC`. With
`--available-now` the query joins what the topic holds, prints how many pairs it wrote and stops;
without, it runs until Ctrl-C. Restarting it with the same CHECKPOINT continues where it stopped,
and no pair is written twice.
"""

from __future__ import annotations

import argparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.config import Settings, load_settings
from statestream.jobs.session import spark_session
from statestream.join import JoinSpec
from statestream.spark import complement_join, write_exactly_once

SCHEMA = "machine string, ts long, signal string, value double"
POWER = JoinSpec("speed", "torque", "power", function="power", tolerance=60.0)


def readings(spark: SparkSession, settings: Settings, topic: str) -> DataFrame:
    """The topic's records in their own columns, with the Kafka offset as arrival order."""
    return (
        spark.readStream.format("kafka")
        .options(**settings.kafka.spark_options())
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("r"), "offset")
        .select("r.*", "offset")
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input_topic")
    parser.add_argument("output_topic")
    parser.add_argument("checkpoint")
    parser.add_argument("--available-now", action="store_true", help="join what is there, stop")
    args = parser.parse_args(argv)

    settings = load_settings()
    spark = spark_session(settings, app_name="statestream-streaming-kafka")  # jars, RocksDB
    pairs = complement_join(
        readings(spark, settings, args.input_topic),
        [POWER],
        thing="machine",
        quantity="signal",
        time="ts",
        value="value",
        order="offset",  # one partition per series (the key), so the offset is its order
    )
    query = write_exactly_once(
        pairs,
        args.output_topic,
        checkpoint=args.checkpoint,
        query_name=f"example_{args.output_topic.replace('.', '_')}",
        settings=settings,
        available_now=args.available_now,
    )
    query.awaitTermination()
    read = sum(progress["numInputRows"] for progress in query.recentProgress)
    print(f"{read} records joined, pairs written to {args.output_topic}")


if __name__ == "__main__":
    main()
