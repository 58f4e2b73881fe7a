"""The join query (`statestream run join`): each record of one series meets its previous and next
record of the other series (the complement join), exactly once.

machine.data → `processor` (per call: decode, route, join; RocksDB state) → machine.out, the
late and the dead-letter topics (`job`: the Spark wiring; `rows`: a call's output rows).
"""

from dataclasses import dataclass

from statestream.queries.definition import Figure, QueryDef

QUERY = QueryDef(
    name="join",
    command="join",
    use_case="machine",
    section="join",
    input_topics=("machine_data",),
    output_topics=("machine_out", "late", "dead_letter"),
    dead_letter_stage="join",
    metrics_name="join_metrics",
    figures=(
        Figure("pairs_out", "pairs", "count:pair", demo=True),
        Figure("late", "late", "count:late", demo=True),
        Figure("duplicates", "duplicates", "sum:duplicates"),
        Figure("malformed", "malformed", "count:malformed", demo=True),
        Figure("state_records", "state records", "sum:state_records"),
    ),
    line=(
        "{pairs_out:,} pairs, late {late:,}, duplicates {duplicates:,}, malformed {malformed:,}, "
        "state {state_records:,} records ({state_kb})"
    ),
    start="statestream.queries.join.job:start_join_query",
    options="statestream.queries.join.job:JoinJobOptions",
    help="""Join speed ⋈ torque → power (the specs of the settings) for every thing, exactly once.

    Joins each thing's series with the complement-join engine (state in Spark's RocksDB state
    store, checkpointed) and writes the pairs to machine.out, late records to the late topic and
    malformed ones to the dead-letter topic, each batch in one Kafka transaction.
    """,
)


@dataclass(frozen=True)
class OutputTopics:
    pairs: str
    late: str
    dead_letter: str
    source: str
    envelope: str = "none"  # how the source's values are encoded
