"""What a chaos run with vehicles (`--vehicles N`) checks besides the machines, from what the
vehicle simulator published and what the positions and cells topics and InfluxDB hold:

- the position of every published HFP message is on the positions topic at least once (the
  connector may write one twice after a kill), except the messages Mosquitto lost in its loss
  window (`loss_window`), which are counted per kill and reported, not failed;
- InfluxDB holds one `vehicle_cells` point per cell and window on the cells topic, with the
  figures of its latest result there (the sink writes every result; a point written again
  overwrites itself): so one point per final cell, with its final figures;
- the geo cells and the bunching alerts against their references are the queries' own checks
  (`QueryDef.verify`: `queries.geo.verify`, `queries.bunching.verify`), under `queries`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

from statestream.chaos.loss_window import BrokerKill, WindowLoss, lost_outside, window_losses
from statestream.chaos.message_log import Messages
from statestream.config import Settings
from statestream.exactly_once.read import read_records
from statestream.ingest.base import EventRejected, RawEvent
from statestream.ingest.envelope import Envelope
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.vehicle_positions import vehicle_codec_for
from statestream.queries.definition import QueryCheck
from statestream.queries.geo.verify import late_positions
from statestream.sinks.influx import influx_rows

PositionKey = tuple[int, int, int]  # oper, veh, event time (ms)
CellPointKey = tuple[str, int]  # cell, window start (µs)
CellPointFigures = tuple[float, float, float]  # final (1.0 or 0.0), positions, vehicles


@dataclass(frozen=True)
class VehiclesPublished:
    """What the vehicle simulator published: (topic, payload) messages and when the broker
    acknowledged each (wall-clock seconds; NaN: never); `positions`, the messages'
    `message_positions` if already made (the runner's wait for them made them)."""

    messages: Messages[tuple[str, bytes]]
    acknowledged_at: Sequence[float]
    positions: Sequence[PositionKey | None] | None = None


@dataclass(frozen=True)
class VehicleChecks:
    """The vehicles' figures; `passed` when no position is lost outside Mosquitto's loss
    window and InfluxDB holds exactly the cells' points."""

    messages_published: int
    positions_expected: int
    positions_in_topic: int
    positions_lost: int  # all missing positions, in Mosquitto's loss windows or not
    positions_lost_outside_window: int  # missing positions no Mosquitto kill explains: a failure
    positions_repeated: int  # extra copies on the positions topic (allowed: at least once)
    positions_late: int  # that the geo query found late (written to the late topic, not counted)
    cell_points: QueryCheck
    mosquitto_windows: tuple[WindowLoss, ...] = field(default=())  # one per Mosquitto kill

    @property
    def passed(self) -> bool:
        return not self.positions_lost_outside_window and self.cell_points.passed

    def to_json(self) -> dict[str, object]:
        figures = {name: value for name, value in self.__dict__.items() if isinstance(value, int)}
        return {
            **figures,
            "cell_points": asdict(self.cell_points),
            "mosquitto_windows": [window.to_json() for window in self.mosquitto_windows],
        }


def check_vehicles(
    settings: Settings, published: VehiclesPublished, kills: Sequence[BrokerKill], started_at: float
) -> VehicleChecks:
    """Compare what the published messages should have become with what is there."""
    topics = settings.topics
    per_message = published.positions
    if per_message is None:
        per_message = message_positions(published.messages)
    expected = {key for key in per_message if key is not None}
    present = Counter(topic_positions(settings))
    missing = expected - present.keys()
    lost = [int(key is not None and key in missing) for key in per_message]
    acknowledged = published.acknowledged_at
    late = late_positions(read_records(settings, topics.late), topics.vehicle_positions)
    cells = [value for _, _, value in read_records(settings, topics.vehicle_cells)]
    return VehicleChecks(
        messages_published=len(per_message),
        positions_expected=len(expected),
        positions_in_topic=sum(present.values()),
        positions_lost=len(missing),
        positions_lost_outside_window=lost_outside(kills, acknowledged, lost),
        positions_repeated=sum(n - 1 for n in present.values()),
        positions_late=sum(late.values()),
        cell_points=cell_points_check(cells, cell_points(settings)),
        mosquitto_windows=tuple(window_losses(kills, acknowledged, lost, started_at)),
    )


def message_positions(messages: Iterable[tuple[str, bytes]]) -> list[PositionKey | None]:
    """The position the connector makes of each (topic, payload) message (its own processor);
    None for a message it refuses."""
    processor = VehiclePositionProcessor()
    keys: list[PositionKey | None] = []
    for topic, payload in messages:
        try:
            [position] = processor.process(RawEvent(payload, topic, 0))
        except EventRejected:
            keys.append(None)
            continue
        keys.append((position.oper, position.veh, position.event_time_ms))
    return keys


def topic_positions(settings: Settings) -> list[PositionKey]:
    """The positions on the positions topic (read_committed), one per record."""
    key = position_keys(settings.ingest.envelope)
    return [key(value) for _, _, value in read_records(settings, settings.topics.vehicle_positions)]


def position_keys(envelope: Envelope) -> Callable[[bytes], PositionKey]:
    """The position of a Kafka value of the positions topic, in the `envelope`'s codec."""
    codec = vehicle_codec_for(envelope)

    def key(value: bytes) -> PositionKey:
        position, _ = codec.decode(value)
        return (position.oper, position.veh, position.event_time_ms)

    return key


def cell_points_check(
    cells: Sequence[bytes], points: dict[CellPointKey, CellPointFigures]
) -> QueryCheck:
    """InfluxDB's `points` against the latest result of each cell and window on the cells
    topic (`cells`, in topic order): `expected` the cell windows, `wrong` points with other
    figures than their latest result (a final one written over by an early one, say)."""
    want: dict[CellPointKey, CellPointFigures] = {}
    for value in cells:
        r = json.loads(value)
        key = (r["cell"], int(r["window_start"]) * 1000)
        want[key] = (float(r["final"]), float(r["positions"]), float(r["vehicles"]))
    return QueryCheck.of(want, points, [])


def cell_points(settings: Settings) -> dict[CellPointKey, CellPointFigures]:
    """The `vehicle_cells` points in the settings' InfluxDB database, by cell and time (µs)."""
    query = "SELECT final, positions, vehicles, cell FROM vehicle_cells"
    return {
        (row["cell"], int(row["time"])): (row["final"], row["positions"], row["vehicles"])
        for row in influx_rows(settings.influx, query)
    }
