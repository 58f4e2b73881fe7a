"""The geo query (`statestream run geo`, with the bunching query beside it): vehicle positions
placed in H3 cells and aggregated per cell and tumbling event-time window, exactly once.

input.vehicle.positions → `input`, `decoding` (Kafka rows → positions) → `processor` (per call:
the cells' windows; RocksDB state) → analytics.vehicle.cells, the late and dead-letter topics
(`job`: the Spark wiring; `rows`: output rows; `vehicle_app`: geo and bunching in one app).
"""

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
)
