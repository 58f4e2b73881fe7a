"""The real sample, time-sorted, through `statestream run join` and then the statistics query:
the statistics equal a straightforward pandas computation of the same definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.config import Settings
from statestream.jobs.stats_job import StatsJobOptions, start_stats_query, stats_spec
from statestream.stats.reference import latest_results, power_frame, reference_statistics
from tests.integration.stats_support import (
    read_json,
    stats_topic_settings,
    topic_env,
)
from tests.integration.test_join_job import _narrow_lines, _produce
from tests.support import run_cli

pytestmark = pytest.mark.integration

RATED_KW = 2.0  # the sample's machines rarely pass 4 kW: at 20 kW no window would alert


def test_sample_statistics_equal_the_pandas_computation(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = stats_topic_settings(local_services, unique_name, 3)
    _produce(settings, _narrow_lines("time"))
    env = {**topic_env(settings), "STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2"}
    checkpoint = str(tmp_path / "join")
    done = run_cli("run", "join", "--available-now", "--checkpoint", checkpoint, env=env)
    assert done.exit_code == 0, done.stdout + done.stderr[-3000:]

    stats = settings.stats.model_copy(update={"rated_power_kw": RATED_KW})
    settings = settings.model_copy(update={"stats": stats})
    options = StatsJobOptions(
        available_now=True, query_name=unique_name, checkpoint=tmp_path / "stats"
    )
    query = start_stats_query(spark, settings, options)
    query.awaitTermination()
    assert query.exception() is None

    pairs = read_json(settings, settings.topics.machine_out)
    expected = reference_statistics(power_frame(pairs), stats_spec(settings))
    levels, duty = latest_results(read_json(settings, settings.topics.stats))
    assert len(levels) > 100 and len(duty) > 1000  # the sample spans days of three machines
    assert levels == expected.levels
    assert duty == pytest.approx(expected.duty)
    alerts = read_json(settings, settings.topics.alerts)
    assert {(a["thing"], a["component"], a["window_start"]) for a in alerts} == {
        key for key, value in expected.duty.items() if value > 0.4
    }
    assert alerts
    late = [r for r in read_json(settings, settings.topics.late) if r.get("stage") == "stats"]
    assert len(late) == int(expected.late.sum())
