"""The geo cells on their topic against the pure engine run over all positions at once, as a
chaos run ends (`QueryDef.verify`).

The engine's contract is that batches do not matter: `statestream.geo.CellWindows` given every
position of the positions topic in one call, then the query's last watermark, gives the final
result of every window the query has closed. The reference therefore takes the topic's values
as they are (a position the connector wrote twice counts twice, as in the query), leaves out the
positions the query wrote to the late topic (their window was gone when they came), and makes
final the windows that end at or before the last watermark: the newest event time of the topic
minus `geo.disorder_s`, which the query reaches in the batch without data that Spark runs after
the one that read that newest position (a chaos run ends with a position a window ahead of the
others, so that this batch comes in its closing `--available-now` run and every window is
final). Each such cell and window's latest final result on the cells topic must equal the
reference's; windows still open at the end (early results only) are not compared.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from statestream.config import Settings
from statestream.exactly_once.read import Record, read_records
from statestream.geo import NO_CELL, NO_WATERMARK, CellWindows, GeoSpec, Positions, cell_records
from statestream.ingest.envelope import Envelope
from statestream.queries.definition import QueryCheck
from statestream.queries.geo.decoding import decode_positions, vehicle_key
from statestream.queries.geo.job import geo_spec

CellKey = tuple[str, int]  # cell, window_start
CellFigures = tuple[int, int, float | None, float | None]  # vehicles, positions, mean speed, delay
LateKey = tuple[str, float]  # vehicle (oper/veh), event time (ms)


def verify(settings: Settings) -> QueryCheck:
    """The latest final result of each closed cell window on its topic against the reference."""
    topics = settings.topics
    positions = read_records(settings, topics.vehicle_positions)
    late = late_positions(read_records(settings, topics.late), topics.vehicle_positions)
    results = [value for _, _, value in read_records(settings, topics.vehicle_cells)]
    return cells_check(positions, late, results, geo_spec(settings), settings.ingest.envelope)


def cells_check(
    positions: Sequence[Record],
    late: Counter[LateKey],
    results: Sequence[bytes],
    spec: GeoSpec,
    envelope: Envelope,
) -> QueryCheck:
    """`results` (the cells topic's values) against the reference of `positions` (the
    positions topic's records) without the `late` ones; a result written twice is a duplicate."""
    want = reference_finals(positions, late, spec, envelope)
    return QueryCheck.of(want, latest_finals(results), list(results))


def reference_finals(
    positions: Sequence[Record], late: Counter[LateKey], spec: GeoSpec, envelope: Envelope
) -> dict[CellKey, CellFigures]:
    """The final figures of every cell window that ends at or before the last watermark."""
    columns = decode_positions([value for _, _, value in positions], envelope, spec.resolution)
    decoded = np.array([reason is None for reason in columns["reason"]], dtype=bool)
    if not decoded.any():
        return {}
    watermark = int(columns["t"][decoded].max()) - spec.disorder_ms
    keep = decoded & (columns["cell"] != NO_CELL) & _not_late(columns, late)
    windows = CellWindows(spec)
    windows.process(Positions(*(columns[name][keep] for name in _POSITION_COLUMNS)), NO_WATERMARK)
    closing = windows.process(Positions.of([], [], []), watermark)
    _, values = cell_records(closing.results, spec.resolution)
    return _figures(json.loads(value) for value in values)


def latest_finals(results: Sequence[bytes]) -> dict[CellKey, CellFigures]:
    """Each cell window's latest final result on the topic (values in topic order)."""
    return final_figures(map(json.loads, results))


def final_figures(records: Iterable[dict]) -> dict[CellKey, CellFigures]:
    """(cell, window_start) → the figures of its latest final result, of results as dicts in
    topic order."""
    return _figures(record for record in records if record["final"])


def late_positions(records: Sequence[Record], positions_topic: str) -> Counter[LateKey]:
    """The positions the geo query wrote to the late topic, as (vehicle, event time), counted:
    a position on the topic twice may be late twice."""
    late: Counter[LateKey] = Counter()
    for _, _, value in records:
        record = json.loads(value)
        if record["stage"] == "geo" and record["source_topic"] == positions_topic:
            late[record["thing"], float(record["phenomenonTime"])] += 1
    return late


_POSITION_COLUMNS = ("t", "cell", "vehicle", "speed", "delay")


def _not_late(columns: dict[str, np.ndarray], late: Counter[LateKey]) -> np.ndarray:
    """False for as many copies of each late (vehicle, time) as were late, the first ones."""
    keep = np.ones(len(columns["t"]), dtype=bool)
    if not late:
        return keep
    left = Counter(late)
    for i, (vehicle, t) in enumerate(zip(columns["vehicle"], columns["t"], strict=True)):
        key = (vehicle_key(int(vehicle)), float(t))
        if left[key] > 0:
            left[key] -= 1
            keep[i] = False
    return keep


def _figures(records) -> dict[CellKey, CellFigures]:
    return {
        (r["cell"], r["window_start"]): (
            r["vehicles"],
            r["positions"],
            r["mean_speed"],
            r["mean_delay"],
        )
        for r in records
    }
