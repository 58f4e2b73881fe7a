"""The quantity statistics query (`statestream run quantity-stats`): count, min, max, mean and
last value of every numeric quantity of every thing per tumbling event-time window, exactly once.

machine.data → `processor` (per call: each series' windows, `windows`; RocksDB state) →
analytics.machine.quantities, the late and dead-letter topics (`job`: the Spark wiring; `rows`:
a call's output rows; `records`: their JSON; `spec`: the time rules; `reference`: a plain
reference the tests hold the engine to).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from statestream.queries.definition import Figure, QueryDef
from statestream.sinks.line_protocol import PointShape

if TYPE_CHECKING:
    from statestream.config import Settings

QUERY = QueryDef(
    name="quantity_stats",
    command="quantity-stats",
    use_case="machine",
    section="quantity_stats",
    input_topics=("machine_data",),
    output_topics=("machine_quantities", "late", "dead_letter"),
    dead_letter_stage="quantity_stats",
    metrics_name="quantity_metrics",
    figures=(
        Figure("windows_out", "quantity windows", "count:window", demo=True),
        Figure("late", "late", "sum:late"),
        Figure("malformed", "malformed", "sum:malformed"),
        Figure("state_windows", "open windows", "sum:open_windows"),
    ),
    line=(
        "{windows_out:,} windows, late {late:,}, malformed {malformed:,}, "
        "state {state_windows:,} windows"
    ),
    start="statestream.queries.quantity_stats.job:start_quantity_stats_query",
    options="statestream.queries.quantity_stats.job:QuantityStatsOptions",
    check="statestream.queries.quantity_stats.job:check_options",
    verify="statestream.queries.quantity_stats.verify:verify",
    help="""Count, min, max, mean and last value of every quantity per window, exactly once.

    For every thing and every numeric quantity, tumbling event-time windows of
    quantity_stats.window_s; "last" is the value of the greatest event time (on a tie, the later
    record). Event time per series (thing, quantity): a window is written when the series'
    watermark (its newest time − quantity_stats.out_of_orderness_s) passes its end, again when a
    record within quantity_stats.allowed_lateness_s changes it; later records go to the late
    topic, undecodable ones to the dead-letter topic. Key thing.quantity.window_start.
    """,
    influx=(
        PointShape(
            topic="machine_quantities",
            measurement="machine_quantities",
            tags=("quantity", "thing"),
            fields=("count", "last", "max", "mean", "min", "window_end"),
            time="window_start",
        ),
    ),
)


@dataclass(frozen=True)
class QuantityTopics:
    """Where a call reads from (`source`, its `envelope`) and writes to."""

    windows: str
    late: str
    dead_letter: str
    source: str
    envelope: str = "none"  # how the source's values are encoded

    @classmethod
    def of(cls, settings: Settings) -> QuantityTopics:
        """The topics of the settings (`QUERY`'s input and output topics)."""
        topics = settings.topics
        names = (topics.machine_quantities, topics.late, topics.dead_letter, topics.machine_data)
        return cls(*names, envelope=settings.ingest.envelope)
