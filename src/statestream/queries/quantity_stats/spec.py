"""What the quantity statistics compute: count, min, max, mean and last value per window.

A series is one (thing, quantity) of numeric machine records, e.g. `temperature` of R0815. Each
record (event time in epoch ms, a finite value) counts in the tumbling window that holds its
event time; event time, watermark and lateness follow the same rules as the operation statistics
(`statestream.stats.StatsSpec`), one watermark per series.
"""

from __future__ import annotations

from dataclasses import dataclass

from statestream.errors import ConfigError


@dataclass(frozen=True)
class QuantitySpec:
    """The windows and time rules of the quantity statistics; times in epoch milliseconds.

    - windows: tumbling, `window_ms` long, starting at whole multiples of `window_ms`; per window
      the count, min, max and mean of the values and the last value (that of the greatest event
      time; on a tie, of the record that arrived later);
    - time: the watermark of a series is its largest event time minus `out_of_orderness_ms`; a
      window is emitted once the watermark reaches its end and again whenever a record changes
      it; a record older than watermark − `allowed_lateness_ms` is late and changes nothing.
    """

    window_ms: int = 60_000
    out_of_orderness_ms: float = 10_000.0
    allowed_lateness_ms: float = 60_000.0

    def __post_init__(self) -> None:
        if self.window_ms <= 0:
            raise ConfigError("the window length must be positive")
        if self.out_of_orderness_ms < 0 or self.allowed_lateness_ms < 0:
            raise ConfigError("out-of-orderness and allowed lateness cannot be negative")
