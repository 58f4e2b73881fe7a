"""kill -9 the statistics job in the middle of batches, restart it from its checkpoint: every
window result and alert exactly once in read_committed output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from statestream.config import Settings
from statestream.queries.stats.job import stats_spec
from statestream.stats.reference import latest_results, reference_statistics
from tests.integration.crash_support import crash_and_finish
from tests.integration.stats_support import (
    produce_power,
    read_json,
    repeated_keys,
    stats_topic_settings,
    topic_env,
)
from tests.stats.driver import series_frame

pytestmark = pytest.mark.integration


def _power_series() -> pd.DataFrame:
    """Three machines, 15 minutes at 1 Hz each, in on/off phases that cross the duty limit."""
    rated = 20_000.0
    seconds = np.arange(900.0)
    frames = [
        series_frame(seconds, np.where((seconds + shift) % 400 < on, 0.9, 0.1) * rated, thing)
        for thing, shift, on in (("M1", 0, 250), ("M2", 130, 140), ("M3", 260, 180))
    ]
    return pd.concat(frames, ignore_index=True)


def test_kill_minus_nine_and_restart_loses_and_repeats_no_window(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = stats_topic_settings(local_services, unique_name, 3)
    records = _power_series()
    produce_power(settings, records)
    checkpoint = tmp_path / "checkpoint"
    crash_and_finish("stats", topic_env(settings), checkpoint, "--max-offsets-per-trigger", "600")

    results = read_json(settings, settings.topics.stats)
    alerts = read_json(settings, settings.topics.alerts)
    assert repeated_keys(results) == [] and repeated_keys(alerts) == []
    expected = reference_statistics(records, stats_spec(settings))
    levels, duty = latest_results(results)
    assert levels == expected.levels
    assert duty == pytest.approx(expected.duty)
    assert {(a["thing"], a["component"], a["window_start"]) for a in alerts} == {
        key for key, value in expected.duty.items() if value > 0.4
    }
    assert len(alerts) > 0
