"""The statistics query (`statestream run stats`): power levels and duty cycle per thing and
component in event-time windows, and duty-cycle alerts, exactly once.

machine.out → `processor` (per call: the power series' windows; RocksDB state) → the
statistics, alert, late and dead-letter topics (`job`: the Spark wiring; `rows`: output rows).
"""

from statestream.queries.definition import Figure, QueryDef

QUERY = QueryDef(
    name="stats",
    command="stats",
    use_case="machine",
    section="stats",
    input_topics=("machine_out",),
    output_topics=("stats", "alerts", "late", "dead_letter"),
    dead_letter_stage="stats",
    metrics_name="stats_metrics",
    figures=(
        Figure("windows_out", "windows", "count:stats", demo=True),
        Figure("alerts", "alerts", "count:alert", demo=True),
        Figure("late", "late", "sum:late", demo=True),
        Figure("malformed", "malformed", "sum:malformed", demo=True),
        Figure("other_quantities", "other quantities", "sum:other"),
        Figure("state_windows", "open windows", "sum:open_windows"),
    ),
    line=(
        "{windows_out:,} windows, {alerts:,} alerts, late {late:,}, malformed {malformed:,}, "
        "other quantities {other_quantities:,}, state {state_windows:,} windows"
    ),
    start="statestream.queries.stats.job:start_stats_query",
    options="statestream.queries.stats.job:StatsJobOptions",
)
