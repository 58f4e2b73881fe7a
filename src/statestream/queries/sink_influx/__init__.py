"""The InfluxDB sink query (`statestream run sink-influx`): the machine and vehicle topics
written to InfluxDB as points, each point once (a point written again overwrites itself).

machine.data, machine.out, the statistics, alert and cell topics, and the topics whose points
the queries declare (`QueryDef.influx`) → `job` (the tasks turn records
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
    check="statestream.queries.sink_influx.job:check_options",
    help="""Write the machine topics, the statistics, alerts and vehicle cells to InfluxDB.

    Reads its topics (read_committed) and writes measurements machine_data, machine_out,
    machine_stats, machine_alerts, vehicle_cells and those the queries declare for their own
    topics (`QueryDef.influx`) to the database of the settings (created if missing), in
    requests of influx_sink.points_per_request points. A point is its measurement, tags and
    time, so writing a batch again doubles nothing. The Spark tasks write the points,
    each its own partition. While InfluxDB is down the current batch waits and retries with
    backoff (a warning per attempt) and the query does not move on; it continues when InfluxDB is
    back (Ctrl-C meanwhile: that batch is written again on the next start). Records that cannot
    be points go to the dead-letter topic with the reason, exactly once.
    """,
    printer="statestream.queries.sink_influx.job:SinkTotals",
)
