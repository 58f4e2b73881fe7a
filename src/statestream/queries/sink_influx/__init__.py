"""The InfluxDB sink query (`statestream run sink-influx`): the machine and vehicle topics
written to InfluxDB as points, each point once (a point written again overwrites itself).

machine.data, machine.out, the statistics, alert and cell topics → `job` (the tasks turn records
into points and write them; records that cannot be points go to the dead-letter topic).
"""

from statestream.queries.definition import Figure, QueryDef

QUERY = QueryDef(
    name="sink_influx",
    command="sink-influx",
    use_case="machine",
    section="influx_sink",
    input_topics=("machine_data", "machine_out", "stats", "alerts", "vehicle_cells"),
    output_topics=("dead_letter",),
    dead_letter_stage="sink_influx",
    metrics_name="sink_metrics",
    figures=(
        Figure("records", "records", "sum:records"),
        Figure("points", "points", "sum:points", demo=True),
        Figure("bad_records", "bad records", "sum:bad_records"),
        Figure("refused_points", "refused points", "sum:refused_points"),
        Figure("retries", "retries", "sum:retries"),
        Figure("dead_letters", "dead letters", "count:malformed"),
    ),
    line="{records:,} records → {points:,} points",
    start="statestream.queries.sink_influx.job:start_influx_sink_query",
    options="statestream.queries.sink_influx.job:InfluxSinkOptions",
    printer="statestream.queries.sink_influx.job:SinkTotals",
)
