"""How long each killed part took to recover: from its kill -9 to the first output it made
possible again, written after it was started again.

A part's output is the topic its recovery shows on first: the connector's and Mosquitto's on
`machine.data` (the connector writes again), the pipeline's, a Kafka broker's and a Spark
worker's on `machine.out` (the join writes again; a record's timestamp is when its task wrote
it). Every time counts from the kill to the first record written after the part was started
again, so it includes the down time even where the output did not stall: on a local cluster the
other brokers and worker may keep the join writing meanwhile. InfluxDB's points carry their event
times, not when they were written, so its recovery is not measured here (`None`).

    >>> outage = Outage("connector", killed_at=100.0, restarted_at=101.5)
    >>> recovery_times([outage], {"machine_data": [99_000, 100_500, 103_250]})
    {'connector': [3.25]}
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

OUTPUT_OF = {
    "connector": "machine_data",
    "mosquitto": "machine_data",
    "pipeline": "machine_out",
    "kafka": "machine_out",
    "spark-worker": "machine_out",
}


@dataclass
class Outage:
    """One kill: of `component`, at `killed_at`, started again at `restarted_at` (wall-clock
    seconds; NaN until then)."""

    component: str
    killed_at: float
    restarted_at: float = math.nan


def recovery_times(
    outages: Sequence[Outage], written_ms: Mapping[str, Sequence[int]]
) -> dict[str, list[float | None]]:
    """Per component, the seconds from each kill to its output's first record written after
    the restart (None: not measured, or nothing written after it)."""
    ordered = {topic: sorted(times) for topic, times in written_ms.items()}
    recovered: dict[str, list[float | None]] = {}
    for outage in outages:
        topic = OUTPUT_OF.get(outage.component)
        times = ordered.get(topic, []) if topic else []
        after = bisect.bisect_right(times, outage.restarted_at * 1000.0)
        seconds = None
        if topic and not math.isnan(outage.restarted_at) and after < len(times):
            seconds = round(times[after] / 1000.0 - outage.killed_at, 3)
        recovered.setdefault(outage.component, []).append(seconds)
    return recovered
