"""Operation statistics of power series: numpy and JSON, no Spark or Kafka.

Per thing and component: seconds in each power level per tumbling window, and the duty cycle
(share of time at high power) per sliding window with an alert above a limit; event time, a
watermark per series, allowed lateness and late records. See `StatsSpec` and `SeriesWindows`.
"""

from statestream.stats.records import duty_records, level_records, window_key
from statestream.stats.spec import (
    LEVEL_LABELS,
    StatsSpec,
    component_pattern,
    is_high,
    power_levels,
)
from statestream.stats.windows import SeriesStep, SeriesWindows, StatsStateError

__all__ = [
    "LEVEL_LABELS",
    "SeriesStep",
    "SeriesWindows",
    "StatsSpec",
    "StatsStateError",
    "component_pattern",
    "duty_records",
    "is_high",
    "level_records",
    "power_levels",
    "window_key",
]
