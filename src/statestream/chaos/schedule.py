"""When the chaos run kills what: a seeded plan of kill -9 moments, components and down times.

The components take turns in rounds, each round a shuffled order of all of them, so a short run
kills each once before any twice; the gaps between two kills and the time a killed part stays
down are drawn from the same seeded generator, so a seed names one run's plan.

    >>> plan = kill_schedule(seed=7, duration_s=120.0, kafka_brokers=1)
    >>> sorted({kill.component for kill in plan}) == sorted(COMPONENTS)
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

COMPONENTS = ("connector", "pipeline", "mosquitto", "influxdb", "kafka")
LONGEST_MEAN_GAP_S = 25.0  # a 20-minute run: ~48 kills
KILLS_PER_SHORT_RUN = 6  # a run shorter than 6 · 25 s: a mean gap of 1/6 of it (~5 kills)
DOWN_S = (0.5, 5.0)  # a killed part stays down this long before it is started again


@dataclass(frozen=True)
class Kill:
    """One kill -9: `at_s` seconds after the load started, of `target` (the process: `kafka-2`
    is broker 2 of `kafka`), started again `down_s` later."""

    at_s: float
    component: str
    target: str
    down_s: float


def mean_gap_s(duration_s: float) -> float:
    """The mean time between two kills of a run of `duration_s`."""
    return min(LONGEST_MEAN_GAP_S, duration_s / KILLS_PER_SHORT_RUN)


def kill_schedule(seed: int, duration_s: float, kafka_brokers: int) -> list[Kill]:
    """The kills of a run of `duration_s` seconds, in time order; the last one leaves its part
    time to come back (one mean gap) before the run ends."""
    rng = random.Random(seed)
    gap = mean_gap_s(duration_s)
    kills: list[Kill] = []
    turn: list[str] = []
    at = 0.0
    while True:
        at += rng.uniform(0.5 * gap, 1.5 * gap)
        if at > duration_s - gap:
            return kills
        if not turn:
            turn = list(COMPONENTS)
            rng.shuffle(turn)
        component = turn.pop()
        kills.append(Kill(at, component, _target(component, kafka_brokers, rng), _down(rng)))


def _target(component: str, kafka_brokers: int, rng: random.Random) -> str:
    if component != "kafka" or kafka_brokers == 1:
        return component
    return f"kafka-{rng.randint(1, kafka_brokers)}"


def _down(rng: random.Random) -> float:
    return round(rng.uniform(*DOWN_S), 2)
