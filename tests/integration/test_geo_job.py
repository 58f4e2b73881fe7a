"""The geo-cell query on real Kafka and real Spark: results equal pandas + h3, lateness, bad input.

Two runs on one checkpoint: the first takes 4 minutes of positions (arriving up to 3 s out of
event-time order, some without a fix, two undecodable values) in several micro-batches; the
second a position within the allowed lateness and one beyond it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pandas as pd
import pytest

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS, LATE_FIELDS
from statestream.config import Settings
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.geo import QUERY
from statestream.queries.geo.job import GeoJobOptions, geo_spec, start_geo_query
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.integration.geo_support import (
    BASE_MS,
    assert_same_cells,
    driving,
    geo_topic_settings,
    latest_finals,
    produce_positions,
    read_json,
    reference_cells,
    shuffled_within,
)

pytestmark = pytest.mark.integration

GOOD = VehiclePosition(22, 1, 1764051330123, "bus", "1052", 1, "52", 60.1699, 24.9384,
                       8.3, 120, -5, 1234, 0, 0, None, "08:15", "2026-11-25")  # fmt: skip


def _run(spark, settings: Settings, checkpoint: Path, max_offsets: int | None = None) -> list:
    options = GeoJobOptions(
        available_now=True, checkpoint=checkpoint, max_offsets_per_trigger=max_offsets
    )
    query = start_geo_query(spark, settings, options)
    query.awaitTermination(600)
    assert query.exception() is None, query.exception()
    return [QUERY.batch_metrics(p) for p in query.recentProgress]


def _one(positions: pd.DataFrame, veh: int, t_s: float) -> pd.DataFrame:
    """A copy of the position nearest `t_s` after the start, as vehicle `veh` at that time."""
    row = positions.iloc[[int((positions["t"] - BASE_MS - t_s * 1000).abs().argmin())]]
    return row.assign(veh=veh, t=BASE_MS + round(t_s * 1000))


def test_cells_equal_pandas_and_h3_with_late_updates_and_late_records(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = geo_topic_settings(local_services, unique_name)
    spec = geo_spec(settings)
    assert (spec.disorder_ms, spec.allowed_lateness_ms, spec.window_ms) == (5000, 60000, 60000)
    main = driving(vehicles=8, seconds=240, seed=3)
    closer = _one(main, 999, 250.0)  # watermark 245 s: windows up to 240 s are final
    first = pd.concat([shuffled_within(main, 3000, seed=4), closer])
    kinds = bad_values(
        orjson.loads(vehicle_codec_for("none").encode(GOOD, 0)),
        time_field="phenomenonTime",
        number_field="lat",
    )
    produce_positions(settings, first, extra=[b"{", b'{"vehicle": "22/1"}', *kinds.values()])
    checkpoint = tmp_path / "checkpoint"
    batches = _run(spark, settings, checkpoint, max_offsets=1200)
    assert len([b for b in batches if b["records_in"]]) >= 2
    assert sum(b["no_fix"] for b in batches) == int(first["lat"].isna().sum())
    assert sum(b["malformed"] for b in batches) == 2 + len(kinds)

    on_time = read_json(settings, settings.topics.vehicle_cells)
    finals = Counter((r["cell"], r["window_start"]) for r in on_time if r["final"])
    expected = reference_cells(main, spec.resolution, spec.window_ms)
    assert set(finals) == set(expected) and set(finals.values()) == {1}
    assert_same_cells(latest_finals(on_time), expected)
    assert any(not r["final"] for r in on_time)  # early results before the watermark passed
    assert {r["resolution"] for r in on_time} == {8}

    within = _one(main, 998, 200.5)  # window 180–240 s is kept until the watermark is 300 s
    beyond = _one(main, 997, 100.5)  # window 60–120 s was dropped at 180 s
    produce_positions(settings, pd.concat([within, beyond]))
    _run(spark, settings, checkpoint)
    results = read_json(settings, settings.topics.vehicle_cells)
    updates = results[len(on_time) :]
    cell = reference_cells(within, spec.resolution, spec.window_ms)
    assert [(u["cell"], u["window_start"], u["final"]) for u in updates] == [
        (*k, True) for k in cell
    ]
    with_late = reference_cells(pd.concat([main, within]), spec.resolution, spec.window_ms)
    assert_same_cells(latest_finals(results), with_late)

    late = read_json(settings, settings.topics.late)
    assert [(r["thing"], r["phenomenonTime"], r["stage"]) for r in late] == [
        ("22/997", float(beyond["t"].iloc[0]), "geo")
    ]
    assert list(late[0])[: len(LATE_FIELDS)] == list(LATE_FIELDS)
    assert late[0]["watermark"] == BASE_MS + 245_000
    dead = assert_each_dead_lettered(read_json(settings, settings.topics.dead_letter), kinds, "geo")
    assert sorted(d["raw"] for d in dead) == ["{", '{"vehicle": "22/1"}']
    assert list(dead[0])[: len(DEAD_LETTER_FIELDS)] == list(DEAD_LETTER_FIELDS)
