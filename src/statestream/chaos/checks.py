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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from statestream.chaos.keys import (
    influx_point_keys,
    offline_keys,
    row_keys,
    scan_data,
    scan_out,
)
from statestream.chaos.loss_window import BrokerKill, WindowLoss, lost_outside, window_losses
from statestream.chaos.message_log import Messages
from statestream.chaos.recovery import Outage, recovery_times
from statestream.chaos.vehicle_checks import VehicleChecks, VehiclesPublished, check_vehicles
from statestream.config import Settings
from statestream.queries import pipeline_queries
from statestream.queries.definition import QueryCheck


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

    rows: Messages[bytes]
    acknowledged_at: Sequence[float]
    started_at: float
    broker_kills: Sequence[BrokerKill] = ()
    vehicles: VehiclesPublished | None = None
    row_keys: tuple[np.ndarray, np.ndarray] | None = None  # `keys.row_keys(rows)`, if made


def check_run(
    settings: Settings,
    published: Published,
    outages: Sequence[Outage] = (),
    say: Callable[[str], None] = lambda _: None,
    influx_writes_ms: Sequence[int] = (),
) -> ChaosChecks:
    """Compare what the published rows should have become with what is there; with the run's
    `outages`, how long each killed part took to recover (InfluxDB's from `influx_writes_ms`,
    when the sink's batches ended: `recovery.SinkBatches`). `say` hears each step as it starts.
    Records, pairs and points are compared by their keys (`keys`), read as they stream by."""
    rows = published.rows
    say(f"checking: the records of {len(rows):,} published rows on machine.data")
    keys, row_of = published.row_keys or row_keys(rows, settings.mqtt.topic)
    expected = np.unique(keys)
    data = scan_data(settings)
    present, copies = np.unique(data.keys, return_counts=True)
    missing = np.setdiff1d(expected, present, assume_unique=True)
    lost_records = np.bincount(row_of[np.isin(keys, missing)], minlength=len(rows))
    kills, acknowledged = published.broker_kills, published.acknowledged_at
    say(f"checking: the offline join of {len(data.keys):,} records on machine.data")
    pairs, want_points = offline_keys(settings, data.quantities)
    out = scan_out(settings)
    say(f"checking: {len(out.keys):,} pairs on machine.out and their InfluxDB points")
    out_pairs, out_copies = np.unique(out.keys, return_counts=True)
    points = influx_point_keys(settings)
    say("checking: the queries' results against their references")
    queries = query_checks(settings, vehicles=published.vehicles is not None)
    vehicles = None
    if published.vehicles is not None:
        say(f"checking: {len(published.vehicles.messages):,} vehicle positions and cell points")
        vehicles = check_vehicles(settings, published.vehicles, kills, published.started_at)
    latency = latency_percentiles(out.sent_ms, out.written_ms)
    return ChaosChecks(
        rows_published=len(rows),
        records_expected=len(expected),
        records_in_topic=len(data.keys),
        records_lost=len(missing),
        records_lost_outside_window=lost_outside(kills, acknowledged, lost_records),
        records_repeated=int((copies - 1).sum()),
        pairs_expected=len(pairs),
        pairs_out=len(out.keys),
        pairs_missing=_absent(pairs, out_pairs),
        pairs_duplicated=int((out_copies - 1).sum()),
        pairs_unexpected=_absent(out_pairs, pairs),
        points=len(points),
        points_missing=_absent(want_points, points),
        points_unexpected=_absent(points, want_points),
        **_window_figures(queries.get("stats")),
        queries=queries,
        mosquitto_windows=tuple(
            window_losses(kills, acknowledged, lost_records, published.started_at)
        ),
        latency_p50_s=latency[0],
        latency_p99_s=latency[1],
        recovery_s=recovery_times(
            outages,
            {
                "machine_data": data.written_ms.tolist(),
                "machine_out": out.written_ms.tolist(),
                "influx_writes": list(influx_writes_ms),
            },
        ),
        vehicles=vehicles,
    )


def _absent(keys: np.ndarray, among: np.ndarray) -> int:
    """How many of the unique `keys` are not among the unique `among`."""
    return len(np.setdiff1d(keys, among, assume_unique=True))


def latency_percentiles(
    sent_ms: np.ndarray, written_ms: np.ndarray
) -> tuple[float | None, float | None]:
    """p50 and p99 of the end-to-end latency, kills included: from the moment the later of a
    pair's two records was sent (`sent_ms`, its event time: the chaos simulator stamps rows as
    it sends them) to the pair's Kafka timestamp on machine.out (`written_ms`, when its task
    wrote it); None without pairs.

    >>> latency_percentiles(np.array([1500.0, 1500.0]), np.array([1700, 2500]))
    (0.6, 0.992)
    """
    if not len(sent_ms):
        return None, None
    latency = (np.asarray(written_ms, float) - np.asarray(sent_ms, float)) / 1000.0
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
