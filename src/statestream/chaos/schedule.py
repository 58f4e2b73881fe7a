"""When the chaos run kills what: a seeded plan of kill -9 moments, components and down times.

The components take turns in rounds, each round a shuffled order of all of them, so a short run
kills each once before any twice; the gaps between two kills and the time a killed part stays
down are drawn from the same seeded generator, so a seed names one run's plan. On a local
cluster a Kafka kill names one of its brokers (`kafka-2`), and with Spark workers
(`services.spark_workers` > 0) a worker is a component too (`spark-worker`, one of them drawn
the same way: `spark-worker-1`); without workers the plan of a seed is the same as before.

    >>> plan = kill_schedule(seed=7, duration_s=120.0, kafka_brokers=1)
    >>> sorted({kill.component for kill in plan}) == sorted(COMPONENTS)
    True
    >>> plan = kill_schedule(seed=7, duration_s=180.0, kafka_brokers=3, spark_workers=2)
    >>> sorted({kill.component for kill in plan}) == sorted(components(spark_workers=2))
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

COMPONENTS = ("connector", "pipeline", "mosquitto", "influxdb", "kafka")
SPARK_WORKER = "spark-worker"  # a component when the local cluster has Spark workers
LONGEST_MEAN_GAP_S = 25.0  # a 20-minute run: ~48 kills
# a run shorter than (components + 1) · 25 s: a mean gap of 1/(components + 1) of it, about one
# kill per component (5 components: 1/6 of the run, ~5 kills; 6 with a Spark worker: 1/7)
DOWN_S = (0.5, 5.0)  # a killed part stays down this long before it is started again


@dataclass(frozen=True)
class Kill:
    """One kill -9: `at_s` seconds after the load started, of `target` (the process: `kafka-2`
    is broker 2 of `kafka`, `spark-worker-1` worker 1), started again `down_s` later."""

    at_s: float
    component: str
    target: str
    down_s: float


def mean_gap_s(duration_s: float, taking_turns: int = len(COMPONENTS)) -> float:
    """The mean time between two kills of a run of `duration_s` whose `taking_turns` components
    are killed in turn."""
    return min(LONGEST_MEAN_GAP_S, duration_s / (taking_turns + 1))


def components(spark_workers: int = 0) -> tuple[str, ...]:
    """The components a run kills: `COMPONENTS`, and a Spark worker when there are workers."""
    return (*COMPONENTS, SPARK_WORKER) if spark_workers > 0 else COMPONENTS


def kill_schedule(
    seed: int, duration_s: float, kafka_brokers: int, spark_workers: int = 0
) -> list[Kill]:
    """The kills of a run of `duration_s` seconds, in time order; the last one leaves its part
    time to come back (one mean gap) before the run ends."""
    rng = random.Random(seed)
    sizes = {"kafka": kafka_brokers, SPARK_WORKER: spark_workers}
    killed = components(spark_workers)
    gap = mean_gap_s(duration_s, len(killed))
    kills: list[Kill] = []
    turn: list[str] = []
    at = 0.0
    while True:
        at += rng.uniform(0.5 * gap, 1.5 * gap)
        if at > duration_s - gap:
            return kills
        if not turn:
            turn = list(killed)
            rng.shuffle(turn)
        component = turn.pop()
        kills.append(Kill(at, component, _target(component, sizes, rng), _down(rng)))


def _target(component: str, sizes: dict[str, int], rng: random.Random) -> str:
    """The process to kill: the component's own, or one of its `sizes[component]` (drawn when
    there are several: `kafka-2`; a single worker is `spark-worker-1`, a single broker `kafka`)."""
    size = sizes.get(component, 1)
    if size > 1:
        return f"{component}-{rng.randint(1, size)}"
    return f"{component}-1" if component == SPARK_WORKER else component


def _down(rng: random.Random) -> float:
    return round(rng.uniform(*DOWN_S), 2)
