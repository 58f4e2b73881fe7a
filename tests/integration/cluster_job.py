"""Run on the local Spark cluster of the settings: a trivial job, the join, the statistics.

`python -m tests.integration.cluster_job` prints one JSON line: the session's master, the
executors, the trivial job's answer, the streaming join's pairs against the offline join's, and
the statistics query (over the join's pairs) against the pandas reference, as in local mode
(tests/integration/test_stats_sample.py). It runs in its own process because the test suite has
one SparkSession per run (a local one).
"""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from statestream.config import Settings, ensure_local_secrets, load_settings
from statestream.jobs.join_job import JoinJobOptions, start_join_query
from statestream.jobs.session import spark_session
from statestream.jobs.stats_job import StatsJobOptions, start_stats_query, stats_spec
from statestream.join import SpecTemplate
from statestream.services.topics import create_topics
from statestream.stats.reference import latest_results, power_frame, reference_statistics
from tests.integration.test_join_job import _narrow_lines, _offline, _pair_key, _produce, _read_json
from tests.integration.test_stats_sample import RATED_KW


def main() -> None:
    settings = ensure_local_secrets(load_settings())
    create_topics(settings)
    started = time.monotonic()
    spark = spark_session(settings, app_name="statestream-cluster-test", for_tests=True)
    session_s = time.monotonic() - started
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("long")
    def plus_one(values: pd.Series) -> pd.Series:  # runs in the workers' Python
        return values + 1

    total = spark.range(1000).repartition(4).select(plus_one("id").alias("n")).agg({"n": "sum"})
    trivial = total.collect()[0][0]
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    lines = _narrow_lines("time")
    _produce(settings, lines)
    template = SpecTemplate(disorder=0.0)
    options = JoinJobOptions(available_now=True, query_name="cluster_join", templates=(template,))
    query = start_join_query(spark, settings, options)
    query.awaitTermination()
    expected, _ = _offline(lines, template)
    got = _read_json(settings, settings.topics.machine_out)
    result = {
        "master": spark.sparkContext.master,
        "executors": executors,
        "trivial": trivial,
        "session_s": round(session_s, 1),
        "query_error": str(query.exception()) if query.exception() else None,
        "pairs": len(got),
        "distinct_pairs": len({_pair_key(p) for p in got}),
        "equal": {_pair_key(p) for p in got} == {_pair_key(p) for p in expected},
        "expected_pairs": len(expected),
        **_statistics(spark, settings),
    }
    spark.stop()
    print(json.dumps(result))


def _statistics(spark: SparkSession, settings: Settings) -> dict[str, object]:
    """The statistics query over the join's pairs against the pandas reference of the same."""
    stats = settings.stats.model_copy(update={"rated_power_kw": RATED_KW})
    settings = settings.model_copy(update={"stats": stats})
    query = start_stats_query(
        spark, settings, StatsJobOptions(available_now=True, query_name="cluster_stats")
    )
    query.awaitTermination()
    error = {"stats_error": str(query.exception()) if query.exception() else None}
    return {**error, **statistics_against_reference(settings)}


def statistics_against_reference(settings: Settings) -> dict[str, object]:
    """What the statistics query wrote (levels, duty cycles, alerts, late records) against the
    pandas reference computed from the join's pairs on the machine_out topic."""
    pairs = _read_json(settings, settings.topics.machine_out)
    expected = reference_statistics(power_frame(pairs), stats_spec(settings))
    levels, duty = latest_results(_read_json(settings, settings.topics.stats))
    alerts = _read_json(settings, settings.topics.alerts)
    late = [r for r in _read_json(settings, settings.topics.late) if r.get("stage") == "stats"]
    return {
        "level_windows": len(levels),
        "duty_windows": len(duty),
        "alerts": len(alerts),
        "levels_equal": levels == expected.levels,
        "duty_equal": duty == pytest.approx(expected.duty),
        "alerts_equal": {(a["thing"], a["component"], a["window_start"]) for a in alerts}
        == {key for key, value in expected.duty.items() if value > settings.stats.duty_limit},
        "stats_late": len(late),
        "expected_stats_late": int(expected.late.sum()),
    }


if __name__ == "__main__":
    main()
