"""The definitions of the geo-cell query: cell resolution, window, disorder, allowed lateness."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeoSpec:
    """Cells of H3 `resolution` in tumbling event-time windows of `window_ms` (times in ms).

    The watermark trails the largest event time seen by `disorder_ms`; a window is final when
    the watermark reaches its end, and is kept (a late position still updates it) until the
    watermark reaches its end + `allowed_lateness_ms`.
    """

    resolution: int = 8
    window_ms: int = 60_000
    disorder_ms: int = 5_000
    allowed_lateness_ms: int = 60_000

    def __post_init__(self) -> None:
        if not 0 <= self.resolution <= 15:
            raise ValueError(f"H3 resolution {self.resolution} is not within 0–15")
        if self.window_ms <= 0 or self.disorder_ms < 0 or self.allowed_lateness_ms < 0:
            raise ValueError("window_ms must be > 0, disorder and allowed lateness ≥ 0")
