"""The `geo` section: the vehicle use case's cells, windows, lateness and bunching pattern.

`statestream run geo` places each vehicle position with a GPS fix in an H3 cell of
`resolution` and aggregates per cell in tumbling event-time windows of `window_s`; the watermark
trails the largest event time by `disorder_s`; a position up to `allowed_lateness_s` behind the
watermark still updates its window, one later goes to the late topic. Two vehicles of the same
route and direction within `bunching_m` of each other for `bunching_s` of event time raise one
bunching alert.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GeoSettings(BaseModel):
    """Geo cells, windows and the bunching pattern of the vehicle-position use case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resolution: int = Field(8, ge=0, le=15, description="H3 resolution of the cells (8: ~0.7 km²)")
    window_s: float = Field(60.0, gt=0, description="tumbling event-time window of the cells")
    disorder_s: float = Field(
        5.0, ge=0, description="bounded out-of-orderness: the watermark trails the newest time"
    )
    allowed_lateness_s: float = Field(
        60.0, ge=0, description="behind the watermark a position still updates its window"
    )
    bunching_m: float = Field(
        150.0, gt=0, description="two vehicles of a route and direction this close are bunched"
    )
    bunching_s: float = Field(
        60.0, gt=0, description="event time a pair must stay bunched before its alert"
    )
    bunching_max_skew_s: float = Field(
        5.0, ge=0, description="two positions are compared only when this close in time"
    )
    buckets: int = Field(
        8, ge=1, description="cell groups of `run geo`: cells per stateful call = cells / buckets"
    )
    trigger_interval_s: float = Field(1.0, gt=0, description="micro-batch interval of `run geo`")
    max_offsets_per_trigger: int | None = Field(
        None, ge=1, description="cap on positions per micro-batch of `run geo`"
    )
