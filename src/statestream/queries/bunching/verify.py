"""The bunching alerts on their topic against the pure engine run over all positions at once, as
a chaos run ends (`QueryDef.verify`).

`statestream.geo.bunching.LineBunching` settles positions in event-time order up to a frontier,
so its alerts do not depend on the micro-batches, as long as no vehicle is further behind its
line's newest position, at a batch's end, than `geo.bunching_s` (a vehicle the line knows) or
`geo.bunching_max_skew_s` (a vehicle new to the line; one that turned at its terminus is new to
the other direction's line). The reference gives each line's positions, decoded as the query
decodes them, in the topic's partition order (each vehicle's own order), to one `LineBunching`
in one call. A position the connector wrote twice is `stale` the second time, in both. Alerts
compare by line, mode, pair and episode start; their detection time, distance and midpoint
must be the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson
import pandas as pd

from statestream.config import Settings
from statestream.exactly_once.read import Record, read_records
from statestream.geo.bunching import BunchingSpec, LineBunching
from statestream.ingest.envelope import Envelope
from statestream.jobs.vehicle_decoding import decode_vehicle_rows
from statestream.queries.bunching.job import bunching_spec
from statestream.queries.bunching.rows import alert_value, process_frame
from statestream.queries.definition import QueryCheck

AlertKey = tuple[str, int, str, str, str, int]  # route, direction, mode, pair, episode start
AlertFigures = tuple[int, float, float, float]  # detected at, distance, lat, long


def verify(settings: Settings) -> QueryCheck:
    """The alerts on their topic against those of the reference, each once."""
    positions = read_records(settings, settings.topics.vehicle_positions)
    alerts = [value for _, _, value in read_records(settings, settings.topics.vehicle_alerts)]
    return alerts_check(positions, alerts, bunching_spec(settings), settings.ingest.envelope)


def alerts_check(
    positions: Sequence[Record], alerts: Sequence[bytes], spec: BunchingSpec, envelope: Envelope
) -> QueryCheck:
    """`alerts` (the alerts topic's values) against the reference of `positions` (the positions
    topic's records in partition order); an alert written twice is a duplicate."""
    want = _keyed(reference_alerts(positions, spec, envelope))
    return QueryCheck.of(want, _keyed(alerts), list(alerts))


def reference_alerts(
    positions: Sequence[Record], spec: BunchingSpec, envelope: Envelope
) -> list[str]:
    """The alert records (JSON, as the query writes them) of `positions`, line by line."""
    decoded, _ = decode_vehicle_rows(kafka_rows(positions), envelope)
    alerts: list[str] = []
    for _, line in decoded.groupby("line", sort=True):
        state = LineBunching(spec)
        step = process_frame(state, line)
        route, direction = str(line["route"].iloc[0]), int(line["direction"].iloc[0])
        alerts += [alert_value(alert, route, direction) for alert in step.alerts]
    return alerts


def kafka_rows(records: Sequence[Record]) -> pd.DataFrame:
    """Records (partition, key, value) as the query's Kafka rows, each partition's offsets
    counted in reading order and the rows sorted by partition, then offset."""
    counted: dict[int, int] = {}
    offsets = []
    for partition, _, _ in records:
        offsets.append(counted.get(partition, 0))
        counted[partition] = offsets[-1] + 1
    rows = pd.DataFrame(
        {
            "key": [None if key is None else key.decode() for _, key, _ in records],
            "value": [value for _, _, value in records],
            "partition": np.array([partition for partition, _, _ in records], dtype=np.int32),
            "offset": np.array(offsets, dtype=np.int64),
        }
    )
    return rows.sort_values(["partition", "offset"], kind="stable", ignore_index=True)


def _keyed(values: Sequence[str | bytes]) -> dict[AlertKey, AlertFigures]:
    keyed: dict[AlertKey, AlertFigures] = {}
    for value in values:
        r = orjson.loads(value)
        first, second = r["vehicles"]
        key = (r["route"], r["direction"], r["mode"], first, second, r["episode_start"])
        keyed[key] = (r["detected_at"], r["distance_m"], r["lat"], r["long"])
    return keyed
