"""The bunching query on real Kafka and real Spark: scripted vehicles, read_committed alerts,
an episode across a restart of the query."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS
from statestream.config import Settings
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.bunching import QUERY
from statestream.queries.bunching.job import BunchingJobOptions, start_bunching_query
from statestream.testing import read_records
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.support import granted

pytestmark = pytest.mark.integration

START_MS = 1_764_051_300_000
M_PER_DEGREE_LONG = 55_311.5  # east-west metres per degree at 60.17° N


def bunching_topic_settings(settings: Settings, name: str) -> Settings:
    """Settings whose vehicle topics are new ones named after `name` (positions: 3 partitions)."""
    topics = settings.topics.model_copy(
        update={
            "vehicle_positions": f"{name}.positions",
            "vehicle_alerts": f"{name}.alerts",
            "dead_letter": f"{name}.dlq",
        }
    )
    new = [NewTopic(topics.vehicle_positions, 3, 1)]
    new += [NewTopic(topic, 1, 1) for topic in (topics.vehicle_alerts, topics.dead_letter)]
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.create_topics(new).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def drive(veh: int, route: str, direction: int, x0_m: float, seconds: int) -> list:
    """A bus driving east at 8 m/s from `x0_m`, one position a second (no fix at 30–34 s)."""
    positions = []
    for s in range(seconds):
        fix = not 30 <= s < 35
        long = 24.9 + (x0_m + 8.0 * s) / M_PER_DEGREE_LONG
        positions.append(
            VehiclePosition(
                oper=22,
                veh=veh,
                event_time_ms=START_MS + s * 1000,
                mode="bus",
                route=route,
                direction=direction,
                desi=route[1:],
                lat=60.17 if fix else None,
                long=long if fix else None,
                speed=8.0,
                heading=90,
                delay=-5,
                odometer=None,
                door_status=0,
                occupancy=0,
                next_stop=None,
                journey_start="08:15",
                operating_day="2026-11-25",
            )
        )
    return positions


def produce(settings: Settings, positions: list, bad: list[tuple[bytes | None, bytes]]) -> None:
    """`positions` in event-time order, keyed by vehicle, in the settings' envelope; then `bad`."""
    codec = vehicle_codec_for(settings.ingest.envelope)
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for position in sorted(positions, key=lambda p: p.event_time_ms):
        value = codec.encode(position, position.event_time_ms + 200)
        producer.produce(settings.topics.vehicle_positions, key=position.key, value=value)
    for key, value in bad:
        producer.produce(settings.topics.vehicle_positions, key=key, value=value)
    producer.flush(30)


def run_to_the_end(spark, settings: Settings, name: str, checkpoint: Path) -> list[dict]:
    """Run the bunching query over what is on the topic (from `checkpoint`); its batch figures."""
    options = BunchingJobOptions(
        available_now=True, max_offsets_per_trigger=300, query_name=name, checkpoint=checkpoint
    )
    query = start_bunching_query(spark, settings, options)
    query.awaitTermination()
    assert query.exception() is None
    return [QUERY.batch_metrics(progress) for progress in query.recentProgress]


def test_a_pair_of_one_line_gives_one_alert_other_lines_none(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = bunching_topic_settings(local_services, unique_name)
    positions = (
        drive(1, "1052", 1, 0.0, 120)
        + drive(2, "1052", 1, 100.0, 120)  # 100 m ahead on the same line: bunched
        + drive(3, "1052", 2, 50.0, 120)  # the other direction
        + drive(4, "1053", 1, 60.0, 120)  # another route
    )
    elsewhere = vehicle_codec_for(settings.ingest.envelope).encode(positions[0], START_MS)
    bad = [(b"22/9", b"{not json"), (b"22/8", elsewhere)]  # the second: not 22/8's position
    template = orjson.loads(vehicle_codec_for("none").encode(positions[0], START_MS))
    kinds = bad_values(template, time_field="phenomenonTime", number_field="lat")
    bad += [(b"22/1", value) for value in kinds.values()]
    restart_ms = START_MS + 40_000  # the episode goes on after a restart from the checkpoint
    produce(settings, [p for p in positions if p.event_time_ms < restart_ms], bad)
    first = run_to_the_end(spark, settings, unique_name, tmp_path / "checkpoint")
    produce(settings, [p for p in positions if p.event_time_ms >= restart_ms], [])
    second = run_to_the_end(spark, settings, unique_name, tmp_path / "checkpoint")
    metrics = first + second
    assert (sum(m["alerts"] for m in first), sum(m["alerts"] for m in second)) == (0, 1)

    alerts = read_records(settings, settings.topics.vehicle_alerts)
    assert [key for _, key, _ in alerts] == [b"1052/1"]
    alert = json.loads(alerts[0][2])
    assert alert == {
        "alert": "bunching",
        "route": "1052",
        "direction": 1,
        "mode": "bus",
        "vehicles": ["22/1", "22/2"],
        "episode_start": START_MS,
        "detected_at": START_MS + 60_000,
        "distance_m": 92.0,  # to the other's latest position, a second (8 m) older
        "lat": 60.17,
        "long": alert["long"],
    }
    assert abs((alert["long"] - 24.9) * M_PER_DEGREE_LONG - (480 + 572) / 2) < 1.0

    dead = [
        json.loads(value) for _, _, value in read_records(settings, settings.topics.dead_letter)
    ]
    dead = assert_each_dead_lettered(dead, kinds, "bunching")
    assert len(dead) == 2
    assert "key '22/8' is not the position's vehicle 22/1" in {d["reason"] for d in dead}
    assert "{not json" in {d["raw"] for d in dead}
    assert all(d["stage"] == "bunching" and list(d) == list(DEAD_LETTER_FIELDS) for d in dead)
    assert {d["source_topic"] for d in dead} == {settings.topics.vehicle_positions}
    assert sum(m["records_in"] for m in metrics) == len(positions) + len(bad)
    assert sum(m["no_fix"] for m in metrics) == 4 * 5
    assert sum(m["malformed"] for m in metrics) == 2 + len(kinds)
