"""The bunching query (runs beside geo): two vehicles of a route and direction too close for too
long give one alert per pair and episode, exactly once.

input.vehicle.positions → `processor` (per call: the lines' vehicles and episodes; RocksDB
state) → analytics.vehicle.alerts and the dead-letter topic (`job`: the Spark wiring; `rows`).
"""

from dataclasses import dataclass

from statestream.queries.definition import Figure, QueryDef

QUERY = QueryDef(
    name="bunching",
    command="geo",  # started by `run geo`, beside the cells
    use_case="vehicle",
    section="geo",
    input_topics=("vehicle_positions",),
    output_topics=("vehicle_alerts", "dead_letter"),
    dead_letter_stage="bunching",
    metrics_name="bunching_metrics",
    figures=(
        Figure("alerts", "alerts", "count:alert", demo=True),
        Figure("no_fix", "no fix", "sum:no_fix"),
        Figure("stale", "stale", "sum:stale"),
        Figure("malformed", "malformed", "sum:malformed", demo=True),
        Figure("state_vehicles", "vehicles", "sum:vehicles"),
        Figure("state_episodes", "episodes", "sum:episodes"),
    ),
    line=(
        "{alerts:,} bunching alerts, no fix {no_fix:,}, stale {stale:,}, "
        "malformed {malformed:,}, state {state_vehicles:,} vehicles, {state_episodes:,} episodes"
    ),
    start="statestream.queries.bunching.job:start_bunching_query",
    options="statestream.queries.bunching.job:BunchingJobOptions",
    verify="statestream.queries.bunching.verify:verify",
)


REJECTS_LINE = ""  # the group of the values that are no usable position


@dataclass(frozen=True)
class BunchingTopics:
    alerts: str
    dead_letter: str
    source: str
