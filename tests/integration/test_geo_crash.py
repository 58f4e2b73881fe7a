"""kill -9 the geo query right after a batch's Kafka commit (before Spark's), restart it from its
checkpoint: every cell result exactly once in read_committed output, none lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from statestream.config import Settings
from statestream.queries.geo.job import geo_spec
from tests.integration.geo_support import (
    assert_same_cells,
    driving,
    geo_topic_settings,
    latest_finals,
    produce_positions,
    reference_cells,
    topic_env,
)
from tests.integration.test_join_crash import _kill_after
from tests.support import read_committed

pytestmark = pytest.mark.integration


def _start_job(settings: Settings, checkpoint: Path, *extra: str) -> subprocess.Popen:
    """`statestream run geo` in its own process group; Spark's logs go to a file."""
    env = {**os.environ, **topic_env(settings), "STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2"}
    args = [sys.executable, "-m", "statestream", "run", "geo", "--checkpoint", str(checkpoint)]
    with open(checkpoint.parent / "job.err", "a") as err:
        return subprocess.Popen(
            [*args, "--max-offsets-per-trigger", "400", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def test_kill_minus_nine_and_restart_loses_and_repeats_no_cell_result(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = geo_topic_settings(local_services, unique_name)
    main = driving(vehicles=8, seconds=180, seed=7)
    closer = main.iloc[[-1]].assign(veh=999, t=main["t"].max() + 70_000)
    produce_positions(settings, pd.concat([main, closer]))
    checkpoint = tmp_path / "checkpoint"
    # killed after the Kafka transaction committed, before Spark recorded the batch as done:
    # Spark runs that batch again on restart, and the writer must recognise and skip it
    job = _start_job(settings, checkpoint, "--pause-after-commit", "30")
    assert _kill_after(job, "committed batch ", 1, 0.5) == 1
    final = _start_job(settings, checkpoint, "--available-now")
    out, _ = final.communicate(timeout=600)
    err = (tmp_path / "job.err").read_text()
    assert final.returncode == 0, out + err[-3000:]
    assert "was committed before; skipped" in err  # the replay did happen, and was skipped

    values = read_committed(settings, settings.topics.vehicle_cells)
    assert [v for v, n in Counter(values).items() if n > 1] == []
    spec = geo_spec(settings)
    results = [json.loads(v) for v in values]
    assert_same_cells(
        latest_finals(results), reference_cells(main, spec.resolution, spec.window_ms)
    )
