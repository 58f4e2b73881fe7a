"""What a chaos run checks at its end, from what the simulator published and what the topics and
InfluxDB hold:

- every record of every published row is on `machine.data` at least once (the connector may
  write one twice after a kill; the join drops such repeats by its duplicate rule), except the
  rows Mosquitto lost in its loss window (acknowledged since its last save before a kill:
  `loss_window`), which are counted per kill and reported, not failed;
- `machine.out` (read_committed) holds exactly the pairs the offline join of `machine.data` makes,
  each once;
- InfluxDB holds one `machine_out` point per pair (series and time);
- each query of the pipeline that declares a check (`QueryDef.verify`) holds on its topic the
  results its reference computes from its input, each once: the statistics from the pairs
  (`windows_*`, as before, and under `queries`), the quantity statistics from machine.data;
- with vehicles, what `vehicle_checks` checks: every published position on the positions topic
  at least once (Mosquitto's loss window aside), one InfluxDB point per cell, and the geo cells'
  and bunching alerts' own checks under `queries`.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from statestream.chaos.loss_window import BrokerKill, WindowLoss, lost_outside, window_losses
from statestream.chaos.recovery import Outage, recovery_times
from statestream.chaos.vehicle_checks import VehicleChecks, VehiclesPublished, check_vehicles
from statestream.config import Settings
from statestream.exactly_once.read import read_records, reads_remembered
from statestream.ingest.base import EventRejected, RawEvent
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.offline_join import join_lines
from statestream.queries import pipeline_queries
from statestream.queries.definition import QueryCheck
from statestream.queries.join.job import spec_templates
from statestream.sinks.influx import influx_rows

RecordKey = tuple[str, str, float, float]  # thing, quantity, time (ms), result
PairKey = tuple[str, str, float, float, float, float]  # thing, quantity, left and right t, v
PointKey = tuple[str, str, int]  # thing, quantity, time (µs)


@dataclass(frozen=True)
class ChaosChecks:
    """The figures the run is judged by; `passed` when nothing is lost or doubled."""

    rows_published: int
    records_expected: int
    records_in_topic: int
    records_lost: int  # all missing records, in Mosquitto's loss windows or not
    records_lost_outside_window: int  # missing records no Mosquitto kill explains: a failure
    records_repeated: int  # extra copies on machine.data (allowed: at least once)
    pairs_expected: int
    pairs_out: int
    pairs_missing: int
    pairs_duplicated: int
    pairs_unexpected: int
    points: int
    points_missing: int
    points_unexpected: int
    windows_expected: int
    windows_missing: int
    windows_wrong: int  # there, with other figures than the reference's
    windows_duplicated: int  # the same result record more than once
    windows_unexpected: int  # results of windows the reference does not close
    queries: dict[str, QueryCheck] = field(default_factory=dict)  # per query with a `verify`
    mosquitto_windows: tuple[WindowLoss, ...] = field(default=())  # one per Mosquitto kill
    latency_p50_s: float | None = None  # a pair on machine.out after its later record was sent
    latency_p99_s: float | None = None
    recovery_s: dict[str, list[float | None]] = field(default_factory=dict)  # per component
    vehicles: VehicleChecks | None = None  # with `--vehicles`

    @property
    def passed(self) -> bool:
        return not any(
            (
                self.records_lost_outside_window,
                self.pairs_missing,
                self.pairs_duplicated,
                self.pairs_unexpected,
                self.points_missing,
                self.points_unexpected,
                self.windows_missing,
                self.windows_wrong,
                self.windows_duplicated,
                self.windows_unexpected,
                *(not check.passed for check in self.queries.values()),
                self.vehicles is not None and not self.vehicles.passed,
            )
        )


@dataclass(frozen=True)
class Published:
    """What the simulator published: the rows, when the broker acknowledged each (NaN: never),
    when it started (wall-clock seconds), and the Mosquitto kills of the run; with vehicles,
    what the vehicle simulator published (None: a run of the machines only)."""

    rows: Sequence[bytes]
    acknowledged_at: Sequence[float]
    started_at: float
    broker_kills: Sequence[BrokerKill] = ()
    vehicles: VehiclesPublished | None = None


def check_run(
    settings: Settings,
    published: Published,
    outages: Sequence[Outage] = (),
    say: Callable[[str], None] = lambda _: None,
) -> ChaosChecks:
    """Compare what the published rows should have become with what is there; with the run's
    `outages`, how long each killed part took to recover. `say` hears each step as it starts.
    Each topic is read once (`reads_remembered`), however many checks read it."""
    with reads_remembered():
        return _check_run(settings, published, outages, say)


def _check_run(
    settings: Settings,
    published: Published,
    outages: Sequence[Outage],
    say: Callable[[str], None],
) -> ChaosChecks:
    rows = published.rows
    say(f"checking: the records of {len(rows):,} published rows")
    per_row = row_records(rows, settings.mqtt.topic)
    expected = set().union(*per_row)
    data_written: list[int] = []
    data_records = read_records(settings, settings.topics.machine_data, timestamps=data_written)
    data = [value for _, _, value in data_records]
    present = Counter(record_key(json.loads(value)) for value in data)
    missing = expected - present.keys()
    lost_records = [len(records & missing) if missing else 0 for records in per_row]
    kills, acknowledged = published.broker_kills, published.acknowledged_at
    say(f"checking: the offline join of {len(data):,} records on machine.data")
    pairs = offline_pairs(settings, data)
    written: list[int] = []
    out_records = read_records(settings, settings.topics.machine_out, timestamps=written)
    say(f"checking: {len(out_records):,} pairs on machine.out and their InfluxDB points")
    out_pairs = [json.loads(v) for _, _, v in out_records]
    latency = pair_latencies(out_pairs, written)
    out = Counter(pair_key(pair) for pair in out_pairs)
    points = machine_out_points(settings)
    want_points = {point_key(pair) for pair in pairs.values()}
    say("checking: the queries' results against their references")
    queries = query_checks(settings, vehicles=published.vehicles is not None)
    vehicles = None
    if published.vehicles is not None:
        say(f"checking: {len(published.vehicles.messages):,} vehicle positions and cell points")
        vehicles = check_vehicles(settings, published.vehicles, kills, published.started_at)
    return ChaosChecks(
        rows_published=len(rows),
        records_expected=len(expected),
        records_in_topic=len(data),
        records_lost=len(missing),
        records_lost_outside_window=lost_outside(kills, acknowledged, lost_records),
        records_repeated=sum(n - 1 for n in present.values()),
        pairs_expected=len(pairs),
        pairs_out=sum(out.values()),
        pairs_missing=len(pairs.keys() - out.keys()),
        pairs_duplicated=sum(n - 1 for n in out.values()),
        pairs_unexpected=len(out.keys() - pairs.keys()),
        points=len(points),
        points_missing=len(want_points - points),
        points_unexpected=len(points - want_points),
        **_window_figures(queries.get("stats")),
        queries=queries,
        mosquitto_windows=tuple(
            window_losses(kills, acknowledged, lost_records, published.started_at)
        ),
        latency_p50_s=latency[0],
        latency_p99_s=latency[1],
        recovery_s=recovery_times(outages, {"machine_data": data_written, "machine_out": written}),
        vehicles=vehicles,
    )


def pair_latencies(
    pairs: Sequence[dict], written_ms: Sequence[int]
) -> tuple[float | None, float | None]:
    """p50 and p99 of the end-to-end latency, kills included: from the moment the later of a
    pair's two records was sent (its event time: the chaos simulator stamps rows as it sends
    them) to the pair's Kafka timestamp on machine.out (when its task wrote it).

    >>> pair = {"left": {"phenomenonTime": 1000}, "right": {"phenomenonTime": 1500}}
    >>> pair_latencies([pair, pair], [1700, 2500])
    (0.6, 0.992)
    """
    if not pairs:
        return None, None
    sent = np.array(
        [max(p["left"]["phenomenonTime"], p["right"]["phenomenonTime"]) for p in pairs], float
    )
    latency = (np.asarray(written_ms, float) - sent) / 1000.0
    p50, p99 = np.percentile(latency, [50, 99])
    return round(float(p50), 3), round(float(p99), 3)


def query_checks(settings: Settings, *, vehicles: bool = False) -> dict[str, QueryCheck]:
    """The check of each query of `run pipeline` (with `vehicles`: `run pipeline --vehicles`)
    that declares one (`QueryDef.verify`)."""
    queries = pipeline_queries(vehicles=vehicles)
    return {q.name: q.verifier()(settings) for q in queries if q.verify}


def _window_figures(stats: QueryCheck | None) -> dict[str, int]:
    """The statistics' check under the names the report had before `queries`."""
    if stats is None:
        return dict.fromkeys(_WINDOW_FIGURES, 0)
    return {f"windows_{name}": getattr(stats, name) for name in _FIGURE_NAMES}


_FIGURE_NAMES = ("expected", "missing", "wrong", "duplicated", "unexpected")
_WINDOW_FIGURES = tuple(f"windows_{name}" for name in _FIGURE_NAMES)


def published_records(rows: Sequence[bytes], topic: str) -> set[RecordKey]:
    """The records the connector makes of `rows` (its own processor; rows it refuses, none)."""
    return set().union(*row_records(rows, topic))


def row_records(rows: Sequence[bytes], topic: str) -> list[set[RecordKey]]:
    """The records the connector makes of each row (none of a row it refuses)."""
    processor = MachineRowProcessor()
    records: list[set[RecordKey]] = []
    for row in rows:
        try:
            made = processor.process(RawEvent(row, topic, 0))
        except EventRejected:
            made = []
        records.append(
            {(r.thing, r.quantity, float(r.phenomenon_time_ms), float(r.result)) for r in made}
        )
    return records


def record_key(record: dict) -> RecordKey:
    return (
        record["thing"],
        record["quantity"],
        float(record["phenomenonTime"]),
        float(record["result"]),
    )


def pair_key(pair: dict) -> PairKey:
    left, right = pair["left"], pair["right"]
    return (
        pair["thing"],
        pair["quantity"],
        float(left["phenomenonTime"]),
        float(left["result"]),
        float(right["phenomenonTime"]),
        float(right["result"]),
    )


def offline_pairs(settings: Settings, data: Sequence[bytes]) -> dict[PairKey, dict]:
    """The offline join of `data` (machine.data in partition order) with the settings' specs;
    pairs still waiting for a partner at the end are not made, as in the running join."""
    quantities = sorted({json.loads(value)["quantity"] for value in data})
    templates = spec_templates(settings)
    specs = [spec for template in templates for spec in template.specs_for(quantities)]
    out = io.StringIO()
    join_lines((value + b"\n" for value in data), specs, out, io.StringIO, flush=False)
    pairs = [json.loads(line) for line in out.getvalue().splitlines()]
    return {pair_key(pair): pair for pair in pairs}


def point_key(pair: dict) -> PointKey:
    return (pair["thing"], pair["quantity"], round(float(pair["phenomenonTime"]) * 1000))


def machine_out_points(settings: Settings) -> set[PointKey]:
    """The series and times of the `machine_out` points in the settings' InfluxDB database."""
    rows = influx_rows(settings.influx, "SELECT result, thing, quantity FROM machine_out")
    return {(row["thing"], row["quantity"], int(row["time"])) for row in rows}
