"""The statistics query on real Kafka and real Spark: synthetic series with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from confluent_kafka import Producer

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS, LATE_FIELDS
from statestream.config import Settings
from statestream.queries.stats import QUERY
from statestream.queries.stats.job import StatsJobOptions, start_stats_query
from statestream.stats import StatsSpec
from statestream.stats.reference import latest_results, reference_statistics
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.integration.stats_support import (
    produce_power,
    read_json,
    repeated_keys,
    stats_topic_settings,
)
from tests.stats.driver import BASE_MS, series_frame

pytestmark = pytest.mark.integration

RATED = 20_000.0
SPEC = StatsSpec(rated_power_w=RATED, out_of_orderness_ms=5_000, allowed_lateness_ms=30_000)
CLOSE_S = 2_000.0  # a last record this late closes every window before it


def _series(thing: str, times: np.ndarray, power: np.ndarray) -> pd.DataFrame:
    return series_frame(np.append(times, CLOSE_S), np.append(power, 0.0), thing, "C11")


def _sawtooth() -> tuple[np.ndarray, np.ndarray]:
    return np.arange(900.0), RATED * (np.arange(900) % 97) / 80.0


def _synthetic() -> tuple[pd.DataFrame, float]:
    """Series with known answers; returns them (arrival order per series) and the stray's time."""
    half_and_half = np.concatenate((np.full(30, RATED), np.full(30, 0.1 * RATED)))
    duty = {n: np.where(np.arange(600) < n, 0.9 * RATED, 0.3 * RATED) for n in (239, 241)}
    times, power = _sawtooth()
    order = np.argsort(times + np.random.default_rng(5).uniform(0, 4.9, len(times)))
    stray_at, stray_s = 700, 100.0  # beyond out-of-orderness + allowed lateness
    frames = [
        _series("HALF", np.arange(60.0), half_and_half),
        _series("BELOW", np.arange(600.0), duty[239]),
        _series("ABOVE", np.arange(600.0), duty[241]),
        _series("ORDERED", times, power),
        _series("SHUFFLED", times[order], power[order]),
        _series("LATE", np.insert(times, stray_at, stray_s), np.insert(power, stray_at, RATED)),
    ]
    return pd.concat(frames, ignore_index=True), BASE_MS + stray_s * 1000


def _without_thing(results: dict) -> dict:
    return {(component, start): value for (_, component, start), value in results.items()}


def _of(thing: str, results: dict) -> dict:
    return _without_thing({k: v for k, v in results.items() if k[0] == thing})


def test_synthetic_series_give_their_known_statistics(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = stats_topic_settings(local_services, unique_name, 3)
    records, stray_time = _synthetic()
    produce_power(settings, records)
    bad = [b"{not json", b'{"thing": "X", "quantity": "vaPower_C11", "phenomenonTime": 5}']
    not_finite = b'{"thing": "X", "quantity": "vaPower_C11", "phenomenonTime": 5, "result": NaN}'
    producer = Producer(settings.kafka.client_config())
    for raw in bad:
        producer.produce(settings.topics.machine_out, value=raw)
    producer.produce(settings.topics.machine_out, key=b"X.vaPower_C11", value=not_finite)
    template = {"thing": "X", "quantity": "vaPower_C11", "phenomenonTime": 5, "result": 1.0}
    kinds = bad_values(template, time_field="phenomenonTime", number_field="result")
    for raw in kinds.values():
        producer.produce(settings.topics.machine_out, key=b"X.vaPower_C11", value=raw)
    producer.produce(
        settings.topics.machine_out,
        key=b"X.other",
        value=b'{"thing": "X", "quantity": "other", "phenomenonTime": 5, "result": 1}',
    )
    producer.flush(30)

    query = start_stats_query(
        spark,
        settings,
        StatsJobOptions(
            available_now=True,
            max_offsets_per_trigger=1500,
            query_name=unique_name,
            checkpoint=tmp_path / "checkpoint",
            spec=SPEC,
        ),
    )
    query.awaitTermination()
    assert query.exception() is None

    results = read_json(settings, settings.topics.stats)
    assert repeated_keys(results) == []  # in order or within the out-of-orderness: once each
    levels, duty = latest_results(results)
    assert levels[("HALF", "C11", BASE_MS)] == [30.0, 0.0, 0.0, 0.0, 30.0]
    assert duty[("ABOVE", "C11", BASE_MS)] == pytest.approx(241 / 600)
    assert max(_of("BELOW", duty).values()) == pytest.approx(239 / 600)
    alerts = read_json(settings, settings.topics.alerts)
    assert {a["thing"] for a in alerts} == {"ABOVE"}
    assert all(a["duty_cycle"] > 0.4 and a["limit"] == 0.4 for a in alerts)
    assert {a["window_start"] for a in alerts} == {
        start for (thing, _, start), d in duty.items() if thing == "ABOVE" and d > 0.4
    }

    assert _of("SHUFFLED", levels) == _of("ORDERED", levels) == _of("LATE", levels)
    assert _of("SHUFFLED", duty) == _of("ORDERED", duty) == _of("LATE", duty)
    late = read_json(settings, settings.topics.late)
    assert [(r["thing"], r["phenomenonTime"], r["reason"]) for r in late] == [
        ("LATE", stray_time, "late")
    ]
    assert late[0]["stage"] == "stats" and set(LATE_FIELDS) < late[0].keys()
    assert late[0]["watermark"] > stray_time + SPEC.out_of_orderness_ms + SPEC.allowed_lateness_ms

    expected = reference_statistics(records, SPEC)
    assert levels == expected.levels
    assert duty == pytest.approx(expected.duty)

    letters = read_json(settings, settings.topics.dead_letter)
    dead = {d["raw"]: d for d in assert_each_dead_lettered(letters, kinds, "stats")}
    assert set(dead) == {raw.decode() for raw in [*bad, not_finite]}  # as they were on the topic
    assert "bad JSON" in dead["{not json"]["reason"]
    assert dead[bad[1].decode()]["reason"] == "missing result"
    assert dead[not_finite.decode()]["reason"] == "result is not a finite number"
    assert all(d["source_topic"] == settings.topics.machine_out for d in dead.values())
    assert all(d["stage"] == "stats" and list(d) == list(DEAD_LETTER_FIELDS) for d in dead.values())
    metrics = [QUERY.batch_metrics(p) for p in query.recentProgress]
    assert sum(m["records_in"] for m in metrics) == len(records) + 4 + len(kinds)
    assert sum(m["windows_out"] for m in metrics) == len(results)
    assert sum(m["alerts"] for m in metrics) == len(alerts)
    assert (sum(m["late"] for m in metrics), sum(m["malformed"] for m in metrics)) == (
        1,
        3 + len(kinds),
    )
    assert sum(m["other_quantities"] for m in metrics) == 1
