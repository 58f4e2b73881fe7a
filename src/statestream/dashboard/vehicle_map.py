"""The state behind the /vehicles map: the cells and bunching alerts on display (pure: no I/O).

Cells and alerts go through the thesis' display policy (`ResultBoard`): a result for the same or a
newer window replaces the one shown for its cell; a cell expires `geo.window_s` + 5 s after it was
shown without a newer one, an alert `geo.bunching_s` + 5 s after. The policy's "now" is the
`EventClock`, event time, so that a replay expires cells in the stream's time. The newest alerts
are also kept as a list, shown whether or not they are still drawn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from statestream.config import Settings
from statestream.dashboard.policy import EXPIRY_GRACE_S, ResultBoard
from statestream.dashboard.vehicles import (
    BUNCHING_KIND,
    CELL_KIND,
    BunchingAlert,
    CellResult,
    EventClock,
    stream_time_ms,
)

LISTED_ALERTS = 50


class VehicleMap:
    """Cells and bunching alerts on display; `apply` and `expire` return the page's messages."""

    def __init__(self, settings: Settings, clock: EventClock | None = None) -> None:
        geo = settings.geo
        self.settings = settings
        self.clock = clock or EventClock()
        self.board = ResultBoard({CELL_KIND: geo.window_s, BUNCHING_KIND: geo.bunching_s})
        self.alerts: deque[dict[str, Any]] = deque(maxlen=LISTED_ALERTS)  # newest first
        self._listed: set[str] = set()

    def layout(self) -> dict[str, Any]:
        """What the page needs to draw: the base map, the window, what the colours mean."""
        geo, dashboard = self.settings.geo, self.settings.dashboard
        return {
            "tile_url": dashboard.tile_url,
            "tile_attribution": dashboard.tile_attribution,
            "resolution": geo.resolution,
            "window_s": geo.window_s,
            "expiry_grace_s": EXPIRY_GRACE_S,
            "bunching_m": geo.bunching_m,
        }

    def apply(
        self, cells: Iterable[CellResult], alerts: Iterable[BunchingAlert]
    ) -> dict[str, Any] | None:
        """Offer the new cells and alerts to the display; the update message, None if nothing
        changed on screen."""
        alerts = list(alerts)
        results: list[CellResult | BunchingAlert] = [*cells, *alerts]
        for result in results:
            self.clock.observe(stream_time_ms(result, self.settings.geo.disorder_s))
        now = self.clock.now()
        shown = [r for r in results if self.board.offer(r, now)]
        listed = [self._list(alert) for alert in alerts if _episode(alert) not in self._listed]
        expired = self.board.expire(now)
        if not (shown or listed or expired):
            return None
        return {
            "type": "update",
            "results": [self.board.message_of(r, now) for r in shown],
            "alerts": listed,
            "expired": expired,
            "event_time": round(now * 1000),
        }

    def expire(self) -> dict[str, Any] | None:
        """Take off what has expired by the event clock; the message, None if nothing did."""
        now = self.clock.now()
        expired = self.board.expire(now)
        if not expired:
            return None
        return {"type": "update", "expired": expired, "event_time": round(now * 1000)}

    def snapshot(self) -> dict[str, Any]:
        """Everything on display, for a page that opens."""
        now = self.clock.now()
        return {
            "layout": self.layout(),
            "results": self.board.messages(now),
            "alerts": list(self.alerts),
            "event_time": round(now * 1000),
        }

    def _list(self, alert: BunchingAlert) -> dict[str, Any]:
        if len(self._listed) >= 10 * LISTED_ALERTS:
            self._listed = {f"{a['key']}@{a['episode_start']}" for a in self.alerts}
        self._listed.add(_episode(alert))
        message = alert.as_message()
        self.alerts.appendleft(message)
        return message


def _episode(alert: BunchingAlert) -> str:
    """One listed alert per pair and episode."""
    return f"{alert.key}@{alert.episode_start}"
