"""The real sample, time-sorted, through the join query and then the statistics query (both on
the test run's SparkSession): the statistics equal a straightforward pandas computation of the
same definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.config import Settings
from statestream.queries.join.job import JoinJobOptions, start_join_query
from statestream.queries.stats.job import StatsJobOptions, start_stats_query, stats_spec
from statestream.stats.reference import latest_results, power_frame, reference_statistics
from tests.integration.stats_support import (
    read_json,
    stats_topic_settings,
)
from tests.integration.test_join_job import _narrow_lines, _produce

pytestmark = pytest.mark.integration

RATED_KW = 2.0  # the sample's machines rarely pass 4 kW: at 20 kW no window would alert


def test_sample_statistics_equal_the_pandas_computation(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = stats_topic_settings(local_services, unique_name, 3)
    _produce(settings, _narrow_lines("time"))
    join = JoinJobOptions(
        available_now=True, query_name=f"{unique_name}_join", checkpoint=tmp_path / "join"
    )
    query = start_join_query(spark, settings, join)
    query.awaitTermination()
    assert query.exception() is None

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
