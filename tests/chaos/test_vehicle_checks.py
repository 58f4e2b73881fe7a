"""A chaos run with vehicles, the parts that need no broker: the vehicle simulator's bookkeeping
of what it published and what the broker acknowledged, the position each message must become,
the InfluxDB cell points against the cells topic, the run's own HFP topics for the connector,
and the report's JSON."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pandas as pd

from statestream.chaos import ChaosOptions, ChaosReport
from statestream.chaos.load import VehicleLoad, closing_position
from statestream.chaos.loss_window import BrokerKill, lost_outside
from statestream.chaos.vehicle_checks import (
    VehicleChecks,
    cell_points_check,
    message_positions,
    position_keys,
)
from statestream.chaos.workspace import run_workspace, vehicle_root
from statestream.config import load_settings
from statestream.demo import vehicle_topic_root
from statestream.ingest.base import RawEvent
from statestream.ingest.hfp import VehiclePositionProcessor
from statestream.ingest.routes import TopicFilter, processor_filters, settings_routes
from statestream.ingest.vehicle_positions import vehicle_codec_for
from statestream.jobs.vehicle_decoding import decode_vehicle_rows
from statestream.queries.definition import QueryCheck
from statestream.queries.geo.decoding import decode_positions

RUN = "20260101000000_5"


def test_the_vehicle_load_keeps_each_message_and_its_acknowledgement(tmp_path: Path) -> None:
    settings = load_settings(paths={"data_dir": tmp_path})
    load = VehicleLoad(settings, vehicles=4, seed=3, root=vehicle_root(RUN))
    kept = load._kept()
    sent = [next(kept) for _ in range(10)]
    assert list(load.messages) == sent and load.rate == 4.0
    assert all(topic.startswith(f"statestream-chaos/{RUN}/hfp/v2/") for topic, _ in sent)
    assert all(math.isnan(at) for at in load.acknowledged_at)
    load._acknowledged([0, 3])
    assert [not math.isnan(at) for at in load.acknowledged_at[:4]] == [True, False, False, True]
    # one position a vehicle and second, the times following the clock
    keys = [key for key in message_positions(sent) if key is not None]
    assert len(keys) == 10 and len({(oper, veh) for oper, veh, _ in keys}) == 4
    assert all(abs(t / 1000 - time.time()) < 30 for _, _, t in keys)


def test_a_stopped_vehicle_load_sends_what_was_due_and_no_more(tmp_path: Path) -> None:
    settings = load_settings(paths={"data_dir": tmp_path})
    load = VehicleLoad(settings, vehicles=5, seed=0, root="")
    load.started_at = time.time() - 2.0  # two seconds of five vehicles were due
    load.request_stop()
    assert len(list(load._kept())) == 10


def test_each_message_becomes_the_position_the_topic_must_hold(tmp_path: Path) -> None:
    settings = load_settings(paths={"data_dir": tmp_path})
    load = VehicleLoad(settings, vehicles=3, seed=1, root=vehicle_root(RUN))
    kept = load._kept()
    messages = [next(kept) for _ in range(6)] + [("statestream-chaos/x/states", b"{}")]
    keys = message_positions(messages)
    assert keys[-1] is None and all(keys[:-1])
    codec = vehicle_codec_for("none")
    topic, payload = messages[0]
    [position] = VehiclePositionProcessor().process(RawEvent(payload, topic, 0))
    assert position_keys("none")(codec.encode(position, 0)) == keys[0]


def test_a_lost_position_counts_in_the_kills_window_only_if_acknowledged_after_its_save() -> None:
    kill = BrokerKill(at=100.0, saved_at=90.0)
    assert lost_outside([kill], [95.0, 80.0, math.nan], [1, 0, 0]) == 0
    assert lost_outside([kill], [95.0, 80.0, math.nan], [0, 1, 1]) == 2


def _cell(cell: str, start: int, final: bool, positions: int, vehicles: int = 1) -> bytes:
    return json.dumps({"cell": cell, "window_start": start, "final": final,
                       "positions": positions, "vehicles": vehicles}).encode()  # fmt: skip


def test_influxdb_holds_one_point_per_cell_window_with_its_latest_figures() -> None:
    cells = [_cell("a", 60_000, False, 2), _cell("a", 60_000, True, 3), _cell("b", 0, True, 1)]
    points = {("a", 60_000_000): (1.0, 3.0, 1.0), ("b", 0): (1.0, 1.0, 1.0)}
    assert cell_points_check(cells, points) == QueryCheck(2, 0, 0, 0, 0)
    early = {**points, ("a", 60_000_000): (0.0, 2.0, 1.0)}  # the final point overwritten
    assert cell_points_check(cells, early).wrong == 1
    check = cell_points_check(cells, {("b", 0): (1.0, 1.0, 1.0), ("c", 0): (1.0, 1.0, 1.0)})
    assert (check.missing, check.unexpected, check.passed) == (1, 1, False)


def test_the_vehicle_checks_fail_on_a_loss_outside_the_window_or_a_bad_point() -> None:
    points = QueryCheck(2, 0, 0, 0, 0)
    good = VehicleChecks(10, 10, 11, 0, 0, 1, 0, points)
    assert good.passed and good.to_json()["positions_repeated"] == 1
    assert not VehicleChecks(10, 10, 9, 1, 1, 0, 0, points).passed
    assert not VehicleChecks(10, 10, 10, 0, 0, 0, 0, QueryCheck(2, 1, 0, 0, 0)).passed


def test_with_vehicles_the_connector_takes_the_runs_own_hfp_topics(tmp_path: Path) -> None:
    settings = load_settings(paths={"data_dir": tmp_path})
    machines = run_workspace(settings, RUN).settings
    assert list(processor_filters(machines).values()) == ["machine"]  # as before
    both = run_workspace(settings, RUN, vehicles=True).settings
    filters = processor_filters(both)
    assert sorted(filters.values()) == ["machine", "vehicles"]
    assert vehicle_topic_root(both) == vehicle_root(RUN)
    hfp = next(f for f, kind in filters.items() if kind == "vehicles")
    assert TopicFilter(hfp).matches(f"{vehicle_root(RUN)}/hfp/v2/journey/ongoing/vp/bus/x")
    routes = {route.kind: route.topic for route in settings_routes(both)}
    assert routes["vehicles"] == both.topics.vehicle_positions
    assert both.topics.vehicle_positions.startswith(f"chaos.{RUN}.")


def test_the_report_says_how_many_vehicles_were_asked() -> None:
    report = ChaosReport(ChaosOptions(minutes=0.5, vehicles=5))
    record = report.to_json()
    assert (record["vehicles_asked"], record["vehicles"], record["passed"]) == (5, None, False)
    json.dumps(record)


def test_the_closing_position_moves_the_watermark_past_every_window_and_makes_no_cell(
    tmp_path: Path,
) -> None:
    settings = load_settings(paths={"data_dir": tmp_path}, geo={"window_s": 10.0})
    now = 1_764_051_300_000
    closer = closing_position(settings, now)
    value = vehicle_codec_for("none").encode(closer, now)
    columns = decode_positions([value], "none", 8)
    assert columns["reason"][0] is None and columns["cell"][0] == 0  # a position, no fix
    assert columns["t"][0] - 5_000 >= now + 10_000  # the watermark after it: past now's window
    rows = pd.DataFrame({"key": [closer.key], "value": [value], "partition": [0], "offset": [0]})
    positions, rejects = decode_vehicle_rows(rows, "none")
    assert len(rejects) == 0 and positions["line"].tolist() == ["chaos-closer/1"]
