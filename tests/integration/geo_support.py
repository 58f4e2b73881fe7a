"""What the geo-cell integration tests share: topics, positions, the pandas + h3 reference."""

from __future__ import annotations

import json
from collections.abc import Iterator

import h3
import numpy as np
import pandas as pd
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.ingest.mqtt import forget_session
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.geo.verify import final_figures
from tests.integration.ingest_support import delete_topics
from tests.support import granted, read_committed

BASE_MS = 1_764_051_300_000  # a whole minute: 2025-11-25 06:15 UTC
GEO_TOPICS = ("vehicle_positions", "vehicle_cells", "vehicle_alerts", "late", "dead_letter")


def vehicle_connector_settings(settings: Settings, name: str) -> Iterator[Settings]:
    """A fixture's body: `settings` with new vehicle topics named after `name` and a connector
    (client id `name`) whose only processor takes the HFP root `name`; its MQTT session and the
    topics are removed after the test."""
    test = geo_topic_settings(settings, name)
    processors = {name + TOPIC_FILTER: "vehicles"}
    ingest = test.ingest.model_copy(update={"client_id": name, "processors": processors})
    yield test.model_copy(update={"ingest": ingest})
    forget_session(test.mqtt, name)
    delete_topics(test, *(getattr(test.topics, role) for role in GEO_TOPICS))


def geo_topic_settings(settings: Settings, name: str, partitions: int = 3) -> Settings:
    """Settings whose vehicle topics are new ones named after `name`."""
    topics = settings.topics.model_copy(
        update={
            "vehicle_positions": f"{name}.positions",
            "vehicle_cells": f"{name}.cells",
            "vehicle_alerts": f"{name}.alerts",
            "late": f"{name}.late",
            "dead_letter": f"{name}.dlq",
        }
    )
    admin = AdminClient(settings.kafka.client_config())
    new = [NewTopic(topics.vehicle_positions, partitions, 1)]
    outputs = (topics.vehicle_cells, topics.vehicle_alerts, topics.late, topics.dead_letter)
    new += [NewTopic(t, 1, 1) for t in outputs]
    for future in admin.create_topics(new).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def topic_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a child process the same topics."""
    return {f"STATESTREAM_TOPICS__{n.upper()}": getattr(settings.topics, n) for n in GEO_TOPICS}


def driving(vehicles: int, seconds: int, seed: int, no_fix_share: float = 0.05) -> pd.DataFrame:
    """Vehicles driving straight lines through central Helsinki at 1 Hz, in time order.

    Columns oper, veh, t (epoch ms), lat, long (NaN: no fix), speed, delay (NaN: missing).
    """
    rng = np.random.default_rng(seed)
    frames = []
    for v in range(vehicles):
        start = np.array([60.16, 24.92]) + rng.uniform(0, 0.03, 2)
        step = rng.uniform(-1.5e-4, 1.5e-4, 2)
        s = np.arange(seconds)
        lat, long = start[0] + s * step[0], start[1] + s * step[1]
        no_fix = rng.random(seconds) < no_fix_share
        frames.append(
            pd.DataFrame(
                {
                    "oper": 22,
                    "veh": 1000 + v,
                    "t": BASE_MS + s * 1000 + rng.integers(0, 1000, seconds),
                    "lat": np.where(no_fix, np.nan, lat),
                    "long": np.where(no_fix, np.nan, long),
                    "speed": np.where(
                        rng.random(seconds) < 0.1, np.nan, rng.uniform(0, 15, seconds)
                    ),
                    "delay": np.where(
                        rng.random(seconds) < 0.1, np.nan, rng.integers(-60, 60, seconds)
                    ),
                }
            )
        )
    return pd.concat(frames).sort_values("t", kind="stable", ignore_index=True)


def shuffled_within(positions: pd.DataFrame, disorder_ms: int, seed: int) -> pd.DataFrame:
    """`positions` in an arrival order at most `disorder_ms` from event-time order."""
    jitter = np.random.default_rng(seed).uniform(0, disorder_ms, len(positions))
    return positions.iloc[np.argsort(positions["t"].to_numpy() + jitter, kind="stable")]


def _position(row) -> VehiclePosition:
    def number(value):
        return None if pd.isna(value) else float(value)

    delay = None if pd.isna(row.delay) else int(row.delay)
    return VehiclePosition(
        int(row.oper),
        int(row.veh),
        int(row.t),
        "bus",
        "1052",
        1,
        "52",
        number(row.lat),
        number(row.long),
        number(row.speed),
        120,
        delay,
        1000,
        0,
        0,
        None,
        "08:15",
        "2026-11-25",
    )


def produce_positions(settings: Settings, positions: pd.DataFrame, extra: list[bytes] = ()) -> None:
    """`positions` onto the positions topic, keyed oper/veh, in order; then the `extra` values."""
    codec = vehicle_codec_for(settings.ingest.envelope)
    producer = Producer({**settings.kafka.client_config(), "enable.idempotence": True})
    for row in positions.itertuples(index=False):
        position = _position(row)
        producer.produce(
            settings.topics.vehicle_positions,
            key=position.key,
            value=codec.encode(position, int(row.t) + 50),
        )
    for value in extra:
        producer.produce(settings.topics.vehicle_positions, key="22/1", value=value)
    producer.flush(30)


def read_json(settings: Settings, topic: str) -> list[dict]:
    return [json.loads(value) for value in read_committed(settings, topic)]


def reference_cells(positions: pd.DataFrame, resolution: int, window_ms: int) -> dict:
    """(cell, window_start) → (vehicles, positions, mean_speed, mean_delay), by pandas + h3."""
    placed = positions.dropna(subset=["lat", "long"])
    frame = placed.assign(
        cell=[
            h3.latlng_to_cell(a, b, resolution)
            for a, b in zip(placed.lat, placed.long, strict=True)
        ],
        window_start=placed["t"] // window_ms * window_ms,
        vehicle=placed["oper"].astype(str) + "/" + placed["veh"].astype(str),
    )
    groups = frame.groupby(["cell", "window_start"])
    table = groups.agg(
        vehicles=("vehicle", "nunique"),
        positions=("vehicle", "size"),
        mean_speed=("speed", "mean"),
        mean_delay=("delay", "mean"),
    )
    return {
        key: (int(r.vehicles), int(r.positions), _none(r.mean_speed), _none(r.mean_delay))
        for key, r in table.iterrows()
    }


def latest_finals(results: list[dict]) -> dict:
    """(cell, window_start) → the values of its latest final result."""
    return final_figures(results)


def assert_same_cells(actual: dict, expected: dict) -> None:
    """Same (cell, window) keys, equal counts and means equal up to rounding (None = None)."""
    assert set(actual) == set(expected)
    for key, values in expected.items():
        got = actual[key]
        assert got[:2] == values[:2], (key, got, values)
        for a, b in zip(got[2:], values[2:], strict=True):
            assert (a is None and b is None) or a == pytest.approx(b), (key, got, values)


def _none(value: float) -> float | None:
    return None if pd.isna(value) else float(value)
