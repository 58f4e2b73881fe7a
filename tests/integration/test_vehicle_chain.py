"""The vehicle use case end to end on real parts: the simulator's HFP messages (with the real
feed's faults: no fix, duplicates, disorder, tunnels) through Mosquitto, `statestream connect
mqtt` (its own process) and the geo query give the cells of a pandas + h3 computation of the
same messages, read straight from their JSON payloads."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from statestream.config import Settings
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.vehicle_delivery import VehicleSimulation, run_vehicle_simulation
from statestream.queries.geo import QUERY
from statestream.queries.geo.job import GeoJobOptions, geo_spec, start_geo_query
from tests.integration.geo_support import (
    BASE_MS,
    assert_same_cells,
    latest_finals,
    read_json,
    reference_cells,
    vehicle_connector_settings,
)
from tests.integration.ingest_support import wait_for_records

pytestmark = pytest.mark.integration

SIMULATION = VehicleSimulation(vehicles=10, duration_s=210, seed=17, start_ms=BASE_MS)


@pytest.fixture
def chain(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """This test's vehicle topics, and a connector whose only processor takes its HFP root."""
    yield from vehicle_connector_settings(local_services, unique_name)


def test_simulated_feed_through_mqtt_and_the_connector_gives_the_reference_cells(
    spark, chain: Settings, tmp_path: Path
) -> None:
    simulation = dataclasses.replace(SIMULATION, root=chain.ingest.client_id)
    messages = list(simulation.messages())
    sent = _positions(messages)
    assert sent["lat"].isna().any() and sent.duplicated(["oper", "veh", "t"]).any()
    assert not sent["t"].is_monotonic_increasing  # disorder and tunnels, as the real feed

    connector = ConnectorProcess(chain, tmp_path / "connector.log", "--report-every", "0")
    connector.start()
    try:
        run_vehicle_simulation(chain, simulation, target="mqtt")
        landed = wait_for_records(chain, chain.topics.vehicle_positions, len(messages))
    finally:
        assert connector.stop() == 0, connector.output()
    assert landed == len(messages)

    query = start_geo_query(
        spark,
        chain,
        GeoJobOptions(
            available_now=True, checkpoint=tmp_path / "checkpoint", max_offsets_per_trigger=600
        ),
    )
    query.awaitTermination(600)
    assert query.exception() is None, query.exception()
    batches = [QUERY.batch_metrics(p) for p in query.recentProgress]
    assert len([b for b in batches if b["records_in"]]) >= 3
    assert sum(b["no_fix"] for b in batches) == int(sent["lat"].isna().sum())
    assert sum(b["malformed"] for b in batches) == 0

    late = Counter(
        (r["thing"], int(r["phenomenonTime"])) for r in read_json(chain, chain.topics.late)
    )
    results = read_json(chain, chain.topics.vehicle_cells)
    finals = latest_finals(results)
    final_windows = {window for _, window in finals}
    spec = geo_spec(chain)
    certain = {
        start
        for start in range(BASE_MS, int(sent["t"].max()), spec.window_ms)
        if start + spec.window_ms + spec.disorder_ms + spec.window_ms <= sent["t"].max()
    }
    assert len(certain) >= 2 and certain <= final_windows
    expected = reference_cells(_without(sent, late), spec.resolution, spec.window_ms)
    assert_same_cells(finals, {k: v for k, v in expected.items() if k[1] in final_windows})


def _positions(messages: list[tuple[str, bytes]]) -> pd.DataFrame:
    """The positions of HFP messages as `reference_cells` takes them, from the JSON itself."""
    rows = []
    for _, payload in messages:
        vp = json.loads(payload)["VP"]
        rows.append(
            {
                "oper": vp["oper"],
                "veh": vp["veh"],
                "t": int(datetime.fromisoformat(vp["tst"]).timestamp() * 1000),
                "lat": vp["lat"],
                "long": vp["long"],
                "speed": vp["spd"],
                "delay": vp["dl"],
            }
        )
    return pd.DataFrame(rows).astype({"lat": float, "long": float, "speed": float, "delay": float})


def _without(positions: pd.DataFrame, late: Counter) -> pd.DataFrame:
    """`positions` less those the query reported late (by vehicle and time, as often as each)."""
    left = Counter(late)
    keep = []
    for row in positions.itertuples(index=False):
        key = (f"{row.oper}/{row.veh}", row.t)
        keep.append(left[key] == 0)
        if left[key]:
            left[key] -= 1
    assert not +left, f"late records of positions never sent: {+left}"
    return positions[keep]
