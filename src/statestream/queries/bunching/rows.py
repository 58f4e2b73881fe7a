"""One call of the bunching processor: the positions of one line → its alerts.

Rows arrive unordered: they are put back in Kafka offset order, so each vehicle's positions
(one key, one partition) are taken in the order they arrived, the same in every attempt of a
batch. A call's records go out packed, one row per kind (`alert`, `malformed`) and topic, then a
`figures` row with the counts that the query reports (`exactly_once.packed_rows`).
`queries.bunching.processor` imports this module on its first call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import orjson
import pandas as pd

from statestream.codecs.kafka_rows import kafka_ordered
from statestream.exactly_once.packed_rows import OutputRows, output_schema
from statestream.geo.bunching import BunchingAlert, BunchingSpec, BunchingStep, LineBunching
from statestream.queries.bunching import QUERY, REJECTS_LINE, BunchingTopics

FIGURE_COLUMNS = (
    "records long, no_fix long, stale long, malformed long, vehicles long, episodes long, "
    "max_event_time double"
)
OUTPUT_SCHEMA = output_schema(FIGURE_COLUMNS)


def line_rows(
    line_key: str,
    rows: Iterable[pd.DataFrame],
    line_state,
    spec: BunchingSpec,
    topics: BunchingTopics,
) -> pd.DataFrame:
    """The output rows of one call: `rows`, the decoded positions of the line `line_key`
    (`route/direction`; `REJECTS_LINE`: values that are no usable position), its state kept in
    `line_state` (the processor's ValueState)."""
    frame = kafka_ordered(rows)
    out = _Output(topics)
    out.records = len(frame)
    if line_key == REJECTS_LINE:
        out.malformed(frame)
        return out.frame()
    stored = line_state.get()
    line = LineBunching(spec) if stored is None else LineBunching.from_bytes(spec, bytes(stored[0]))
    step = process_frame(line, frame)
    line_state.update((line.to_bytes(),))
    out.step(line_key, str(frame["route"].iloc[0]), int(frame["direction"].iloc[0]), step)
    out.vehicles, out.episodes = len(line.newest), line.open_episodes
    return out.frame()


def process_frame(line: LineBunching, frame: pd.DataFrame) -> BunchingStep:
    """`line.process` of a frame of decoded positions (vehicle, t, lat, long, mode)."""
    return line.process(
        frame["vehicle"].to_numpy(dtype=object),
        frame["t"].to_numpy(dtype=np.float64),
        frame["lat"].to_numpy(dtype=np.float64),
        frame["long"].to_numpy(dtype=np.float64),
        frame["mode"].to_numpy(dtype=object),
    )


def alert_value(alert: BunchingAlert, route: str, direction: int) -> str:
    """The JSON text of an alert on `analytics.vehicle.alerts` (times epoch ms).

    >>> alert = BunchingAlert(("22/1234", "22/1240"), "bus", 1000.0, 61000.0, 92.04, 60.17,
    ...                       24.9095124)
    >>> record = orjson.loads(alert_value(alert, "1052", 1))
    >>> list(record)
    ['alert', 'route', 'direction', 'mode', 'vehicles', 'episode_start', 'detected_at', \
'distance_m', 'lat', 'long']
    >>> record["vehicles"], record["episode_start"], record["distance_m"], record["long"]
    (['22/1234', '22/1240'], 1000, 92.0, 24.909512)
    """
    return orjson.dumps(
        {
            "alert": "bunching",
            "route": route,
            "direction": direction,
            "mode": alert.mode,
            "vehicles": list(alert.vehicles),
            "episode_start": round(alert.episode_start),
            "detected_at": round(alert.detected_at),
            "distance_m": round(alert.distance_m, 1),
            "lat": round(alert.lat, 6),
            "long": round(alert.long, 6),
        }
    ).decode()


class _Output:
    """The records one call produces, and its counts."""

    def __init__(self, topics: BunchingTopics) -> None:
        self.topics = topics
        self.rows = OutputRows()
        self.records = self.no_fix = self.stale = self.malformed_count = 0
        self.vehicles = self.episodes = 0
        self.max_event_time = -math.inf

    def malformed(self, rejects: pd.DataFrame) -> None:
        """Values that are no usable positions, with their reasons (`vehicle_decoding`)."""
        self.malformed_count += len(rejects)
        self.rows.add_dead_letters(
            QUERY.dead_letter_stage, self.topics.dead_letter, self.topics.source, rejects
        )

    def step(self, line: str, route: str, direction: int, step: BunchingStep) -> None:
        self.no_fix, self.stale = step.no_fix, step.stale
        self.max_event_time = step.max_event_time
        values = [alert_value(alert, route, direction) for alert in step.alerts]
        self.rows.add_many("alert", self.topics.alerts, line, values)

    def frame(self) -> pd.DataFrame:
        latest = self.max_event_time if self.max_event_time > -math.inf else math.nan
        figures = {
            "records": self.records,
            "no_fix": self.no_fix,
            "stale": self.stale,
            "malformed": self.malformed_count,
            "vehicles": self.vehicles,
            "episodes": self.episodes,
            "max_event_time": latest,
        }
        return self.rows.frame(figures, FIGURE_COLUMNS)
