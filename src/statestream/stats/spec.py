"""What the operation statistics compute: power levels, windows, duty cycle, time rules.

A power series is one (thing, component), e.g. `vaPower_C11` of R0815. Each power record counts
for one sampling interval, in the window that holds its event time. Its *level* is its magnitude
as a share of the rated power, in five bands of 20 % (a record at ≥ 100 % is in the top band;
braking power, negative, counts by its magnitude):

>>> spec = StatsSpec(rated_power_w=20_000.0)
>>> power_levels(np.array([0.0, 3_999.0, 4_000.0, 16_000.0, -20_000.0, 26_000.0]), spec).tolist()
[0, 0, 1, 4, 4, 4]
>>> LEVEL_LABELS[4]
'80-100'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from statestream.errors import ConfigError

LEVEL_LABELS = ("0-20", "20-40", "40-60", "60-80", "80-100")
LEVEL_BOUNDS = np.array([0.2, 0.4, 0.6, 0.8])  # lower bounds of the upper four levels


@dataclass(frozen=True)
class StatsSpec:
    """The definitions of the statistics of one power series; times in epoch milliseconds.

    - levels: per tumbling window of `window_ms`, the seconds spent in each level;
    - duty cycle: per sliding window of `duty_window_ms` every `duty_slide_ms`, the seconds at
      ≥ `duty_threshold` of rated power divided by the window's length; above `duty_limit` it
      raises an alert;
    - time: the watermark of a series is its largest event time minus `out_of_orderness_ms`; a
      window is emitted once the watermark reaches its end and again whenever a record refines
      it; a record older than watermark − `allowed_lateness_ms` is late and changes nothing.
    """

    rated_power_w: float = 20_000.0
    window_ms: int = 60_000
    duty_window_ms: int = 600_000
    duty_slide_ms: int = 60_000
    duty_threshold: float = 0.8
    duty_limit: float = 0.4
    sampling_interval_s: float = 1.0
    out_of_orderness_ms: float = 10_000.0
    allowed_lateness_ms: float = 60_000.0

    def __post_init__(self) -> None:
        if self.rated_power_w <= 0:
            raise ConfigError("the rated power must be positive")
        if min(self.window_ms, self.duty_window_ms, self.duty_slide_ms) <= 0:
            raise ConfigError("window lengths and the slide must be positive")
        if self.duty_window_ms % self.duty_slide_ms:
            raise ConfigError("the duty-cycle window must be a whole number of slides")
        if self.sampling_interval_s <= 0:
            raise ConfigError("the sampling interval must be positive")
        if self.out_of_orderness_ms < 0 or self.allowed_lateness_ms < 0:
            raise ConfigError("out-of-orderness and allowed lateness cannot be negative")

    @property
    def slides_per_duty_window(self) -> int:
        return self.duty_window_ms // self.duty_slide_ms


def power_levels(power_w: np.ndarray, spec: StatsSpec) -> np.ndarray:
    """The level (0 … 4, see LEVEL_LABELS) of each power value."""
    share = np.abs(np.asarray(power_w, dtype=np.float64)) / spec.rated_power_w
    return np.searchsorted(LEVEL_BOUNDS, share, side="right").astype(np.int8)


def is_high(power_w: np.ndarray, spec: StatsSpec) -> np.ndarray:
    """True where a power value counts towards the duty cycle (≥ the threshold share)."""
    return np.abs(np.asarray(power_w, dtype=np.float64)) >= spec.duty_threshold * spec.rated_power_w


def component_pattern(quantity_template: str) -> re.Pattern[str]:
    """A regex with group `c` for the component of a power quantity, e.g. from "vaPower_{c}".

    >>> component_pattern("vaPower_{c}").match("vaPower_C11").group("c")
    'C11'
    """
    if "{c}" not in quantity_template:
        raise ConfigError(f"the power quantity {quantity_template!r} must contain {{c}}")
    return re.compile("^" + re.escape(quantity_template).replace(r"\{c\}", "(?P<c>.+)") + "$")
