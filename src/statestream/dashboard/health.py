"""Pipeline health for the dashboard: records/s per topic, lags, late and dead-letter counts.

Each streaming query's Kafka lag is its committed offsets against the topics' end offsets
(`statestream.jobs.lag`, which `statestream status` uses too); the feed (`kafka_feed`) gives the
end offsets. The dashboard's own consumer lag (end offset minus its position) says whether the
dashboard keeps up.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from statestream.config import Settings
from statestream.jobs.lag import QueryLag
from statestream.jobs.status import QueryStatus, read_statuses, status_folder

RATE_WINDOW_S = 5.0
MAX_QUERIES = 20

COUNTED_ROLES = ("late", "dead_letter")  # read from their beginning: the counts are totals


@dataclass
class TopicFigures:
    """What the dashboard knows of one topic it reads."""

    topic: str
    role: str
    records: int = 0
    caught_up: bool = False
    unreadable: int = 0
    last_reason: str | None = None
    _recent: deque[tuple[float, int]] = field(default_factory=deque, repr=False)

    def count(self, records: int, now: float) -> None:
        self.records += records
        self._recent.append((now, records))

    def restart_rate(self) -> None:
        """Forget what was read so far for the rate (a topic read from its beginning has caught
        up: its backlog was not a rate)."""
        self._recent.clear()

    def rate(self, now: float) -> float:
        """Records/s read over the last few seconds."""
        while self._recent and self._recent[0][0] < now - RATE_WINDOW_S:
            self._recent.popleft()
        return sum(n for _, n in self._recent) / RATE_WINDOW_S


def reason_of(raw: bytes | None) -> str | None:
    """The `reason` of a late or dead-letter record, if it has one.

    >>> reason_of(b'{"reason": "late", "watermark": 5}'), reason_of(b"not json")
    ('late', None)
    """
    try:
        value = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    reason = value.get("reason") if isinstance(value, dict) else None
    return str(reason)[:200] if reason is not None else None


def running_queries(settings: Settings) -> list[QueryStatus]:
    """The streaming queries that report to `statestream status` and run (at most
    `MAX_QUERIES`)."""
    return read_statuses(status_folder(settings))[:MAX_QUERIES]


def query_health(
    statuses: Sequence[QueryStatus], lags: Sequence[QueryLag | None], now: float
) -> list[dict[str, Any]]:
    """A row per query for the health panel: its state, rows/s, last batch, how long ago it
    reported (`now`: epoch seconds) and its Kafka lag (`QueryLag.as_json`, None if unknown)."""
    return [
        {
            "query": status.name,
            "state": status.state,
            "rows_per_s": status.processed_rows_per_s,
            "batch": status.batch,
            "updated_s": round(now - status.updated, 1),
            "lag": lag.as_json() if lag is not None else None,
        }
        for status, lag in zip(statuses, lags, strict=True)
    ]
