"""kill -9 the geo query right after a batch's Kafka commit (before Spark's), restart it from its
checkpoint: every cell result exactly once in read_committed output, none lost."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from statestream.config import Settings
from statestream.queries.geo.job import geo_spec
from tests.integration.crash_support import crash_and_finish
from tests.integration.geo_support import (
    assert_same_cells,
    driving,
    geo_topic_settings,
    latest_finals,
    produce_positions,
    reference_cells,
    topic_env,
)
from tests.support import read_committed

pytestmark = pytest.mark.integration


def test_kill_minus_nine_and_restart_loses_and_repeats_no_cell_result(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = geo_topic_settings(local_services, unique_name)
    main = driving(vehicles=8, seconds=180, seed=7)
    closer = main.iloc[[-1]].assign(veh=999, t=main["t"].max() + 70_000)
    produce_positions(settings, pd.concat([main, closer]))
    checkpoint = tmp_path / "checkpoint"
    crash_and_finish(
        "geo",
        topic_env(settings),
        checkpoint,
        "--max-offsets-per-trigger",
        "400",
        inside_batch=False,
    )

    values = read_committed(settings, settings.topics.vehicle_cells)
    assert [v for v, n in Counter(values).items() if n > 1] == []
    spec = geo_spec(settings)
    results = [json.loads(v) for v in values]
    assert_same_cells(
        latest_finals(results), reference_cells(main, spec.resolution, spec.window_ms)
    )
