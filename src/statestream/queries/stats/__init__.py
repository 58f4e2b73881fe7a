"""The statistics query (`statestream run stats`): power levels and duty cycle per thing and
component in event-time windows, and duty-cycle alerts, exactly once.

machine.out → `processor` (per call: the power series' windows; RocksDB state) → the
statistics, alert, late and dead-letter topics (`job`: the Spark wiring; `rows`: output rows).
"""

from dataclasses import dataclass

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
    check="statestream.queries.stats.job:check_options",
    verify="statestream.queries.stats.verify:verify",
    help="""Power levels and duty cycle per thing and component in event-time windows, exactly once.

    Reads the joined power series and writes, per thing and component, the seconds spent in each
    power level (0–20 … 80–100 % of the rated power) per tumbling window and the duty cycle
    (share of time at ≥ 80 %) per sliding window to the statistics topic, and an alert when a
    duty cycle exceeds its limit (settings section `stats`). A window is written when the
    series' watermark passes its end and again when late data within the allowed lateness
    refines it; later records go to the late topic.
    """,
)


@dataclass(frozen=True)
class StatsTopics:
    stats: str
    alerts: str
    late: str
    dead_letter: str
    source: str
