"""The seeded kill plan: a Spark worker is a component only on a cluster with workers, its kills
name workers that exist, and the plans of one broker without workers are those of before."""

from __future__ import annotations

import pytest

from statestream.chaos import COMPONENTS, SPARK_WORKER, components, kill_schedule

SEEDS = range(100)


def _plan(seed: int, duration_s: float, brokers: int, workers: int = 0) -> list[tuple]:
    return [
        (round(k.at_s, 2), k.component, k.target, k.down_s)
        for k in kill_schedule(seed, duration_s, brokers, workers)
    ]


def test_without_workers_the_plans_are_those_of_before() -> None:
    # seed 31 (tests/integration/test_chaos.py): Kafka before Mosquitto, then the pipeline
    assert _plan(31, 30.0, 1) == [
        (2.56, "connector", "connector", 1.12),
        (5.62, "influxdb", "influxdb", 1.54),
        (11.91, "kafka", "kafka", 1.16),
        (18.11, "mosquitto", "mosquitto", 3.48),
        (21.3, "pipeline", "pipeline", 2.91),
    ]
    # seed 7 on three brokers (the measured run of docs/how-to/chaos.md): 8 kills
    assert [target for _, _, target, _ in _plan(7, 180.0, 3)] == [
        "pipeline",
        "influxdb",
        "mosquitto",
        "connector",
        "kafka-1",
        "kafka-3",
        "connector",
        "influxdb",
    ]
    assert len(kill_schedule(11, 1200.0, 1)) == 48  # the measured 20 minutes


@pytest.mark.parametrize("brokers", [1, 3])
def test_a_worker_is_killed_only_when_there_are_workers(brokers: int) -> None:
    assert components(0) == COMPONENTS
    assert components(2) == (*COMPONENTS, SPARK_WORKER)
    for seed in SEEDS:
        plan = kill_schedule(seed, 600.0, brokers)
        assert plan == kill_schedule(seed, 600.0, brokers, spark_workers=0)
        assert SPARK_WORKER not in {kill.component for kill in plan}
        assert {kill.component for kill in kill_schedule(seed, 600.0, brokers, 2)} == set(
            components(2)
        )


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_targets_name_existing_brokers_and_workers(workers: int) -> None:
    targets = {kill.target for seed in SEEDS for kill in kill_schedule(seed, 600.0, 3, workers)}
    named = {f"{SPARK_WORKER}-{n}" for n in range(1, workers + 1)}
    assert {t for t in targets if t.startswith(SPARK_WORKER)} == named  # each, none other
    assert {t for t in targets if t.startswith("kafka")} == {"kafka-1", "kafka-2", "kafka-3"}


def test_the_seed_fixes_the_cluster_plan() -> None:
    plans = [_plan(seed, 300.0, 3, 2) for seed in SEEDS]
    assert plans == [_plan(seed, 300.0, 3, 2) for seed in SEEDS]
    assert len({tuple(plan) for plan in plans}) == len(plans)


def test_a_short_cluster_run_kills_about_once_per_component() -> None:
    """A run shorter than 7 · 25 s with a worker: a mean gap of 1/7 of it. Seed 5 of 2 minutes
    (docs/how-to/chaos.md) kills each of the six, a broker, a worker and the driver among them."""
    plan = kill_schedule(5, 120.0, 3, 2)
    assert [kill.target for kill in plan] == [
        "spark-worker-1",
        "mosquitto",
        "connector",
        "pipeline",
        "influxdb",
        "kafka-2",
    ]
    lengths = [len(kill_schedule(seed, 120.0, 3, 2)) for seed in SEEDS]
    assert 5.5 <= sum(lengths) / len(lengths) <= 6.5
