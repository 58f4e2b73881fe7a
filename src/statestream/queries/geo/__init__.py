"""The geo query (`statestream run geo`, with the bunching query beside it): vehicle positions
placed in H3 cells and aggregated per cell and tumbling event-time window, exactly once.

input.vehicle.positions → `input`, `decoding` (Kafka rows → positions) → `processor` (per call:
the cells' windows; RocksDB state) → analytics.vehicle.cells, the late and dead-letter topics
(`job`: the Spark wiring; `rows`: output rows; `run geo` starts bunching beside it).
"""

from dataclasses import dataclass

from statestream.queries.definition import Figure, QueryDef

QUERY = QueryDef(
    name="geo",
    command="geo",
    use_case="vehicle",
    section="geo",
    input_topics=("vehicle_positions",),
    output_topics=("vehicle_cells", "late", "dead_letter"),
    dead_letter_stage="geo",
    metrics_name="geo_metrics",
    figures=(
        Figure("positions", "placed", "sum:positions"),
        Figure("no_fix", "without fix", "sum:no_fix"),
        Figure("cell_results", "cell results", "count:cells", demo=True),
        Figure("late", "late", "sum:late", demo=True),
        Figure("malformed", "malformed", "sum:malformed", demo=True),
        Figure("state_windows", "open windows", "sum:open_windows"),
    ),
    line=(
        "{positions:,} placed, {no_fix:,} without fix, {cell_results:,} cell results, "
        "late {late:,}, malformed {malformed:,}, {state_windows:,} open windows"
    ),
    start="statestream.queries.geo.job:start_geo_query",
    options="statestream.queries.geo.job:GeoJobOptions",
    check="statestream.queries.geo.job:check_options",
    verify="statestream.queries.geo.verify:verify",
    help="""Vehicle positions → H3 cells in tumbling event-time windows, exactly once.

    Places each position with a GPS fix in its H3 cell (geo.resolution) and aggregates per cell
    and window (geo.window_s): distinct vehicles, positions, mean speed and delay. Early results
    on every batch that changes a window, the final one when the watermark (newest event time −
    geo.disorder_s) passes the window's end, again final for each late update within
    geo.allowed_lateness_s; later positions go to the late topic, undecodable ones to the
    dead-letter topic. The bunching alerts run alongside as their own query, in the same Spark
    application: two vehicles of a route and direction within geo.bunching_m for
    geo.bunching_s of event time give one alert per pair and episode (checkpoint bunching, or
    DIR-bunching beside --checkpoint DIR).
    """,
)


@dataclass(frozen=True)
class GeoTopics:
    cells: str
    late: str
    dead_letter: str
    source: str
