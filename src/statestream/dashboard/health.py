"""Pipeline health for the dashboard: records/s per topic, lags, late and dead-letter counts.

Spark's Kafka source does not commit offsets to Kafka, so a query's lag is read from its
checkpoint instead: the newest file of `<checkpoint root>/<query>/offsets/` holds, for each Kafka
source, the offset of every partition the query has planned up to; the lag is the topic's end
offset minus that. The dashboard's own consumer lag (end offset minus its position) says whether
the dashboard keeps up.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statestream.config import Settings

RATE_WINDOW_S = 5.0
MAX_QUERIES = 20

COUNTED_ROLES = ("late", "dead_letter")  # read from their beginning: the counts are totals

PartitionOffsets = dict[int, int]  # partition → offset


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
    """The `reason` of a late or dead-letter record, if it has one."""
    try:
        value = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    reason = value.get("reason") if isinstance(value, dict) else None
    return str(reason)[:200] if reason is not None else None


def checkpoint_offsets(checkpoint: Path) -> dict[str, PartitionOffsets]:
    """The Kafka offsets the query of `checkpoint` has planned up to: topic → offsets.

    {} when the folder holds no offsets yet or cannot be read.
    """
    return _latest_offsets(checkpoint / "offsets")


def _latest_offsets(folder: Path) -> dict[str, PartitionOffsets]:
    try:
        batches = [p for p in folder.iterdir() if p.name.isdigit()]
    except OSError:
        return {}
    if not batches:
        return {}
    newest = max(batches, key=lambda p: int(p.name))
    try:
        lines = newest.read_text().splitlines()
    except OSError:
        return {}
    offsets: dict[str, PartitionOffsets] = {}
    for line in lines[2:]:  # "v1", the batch's metadata, then one line per source
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if not isinstance(source, dict):
            continue
        for topic, partitions in source.items():
            if isinstance(partitions, dict) and all(
                isinstance(v, int) for v in partitions.values()
            ):
                offsets[topic] = {int(p): o for p, o in partitions.items()}
    return offsets


def lag(end_offsets: Mapping[int, int], positions: Mapping[int, int]) -> int:
    """Records between `positions` and the end, over the partitions both know.

    >>> lag({0: 10, 1: 5}, {0: 7, 1: 5})
    3
    """
    return sum(max(0, end - positions[p]) for p, end in end_offsets.items() if p in positions)


def query_health(
    settings: Settings, end_offsets: Mapping[str, PartitionOffsets]
) -> list[dict[str, Any]]:
    """The streaming queries that report to `statestream status` (running ones), each with its
    rows/s and, when its checkpoint is `<checkpoint root>/<query>`, its lag on the topics the
    dashboard watches (end offset minus the offsets in its newest checkpoint batch).
    """
    try:
        from statestream.jobs.status import read_statuses, status_folder
    except ImportError:  # pragma: no cover - pyspark missing
        return []
    now = time.time()
    rows = []
    for status in read_statuses(status_folder(settings))[:MAX_QUERIES]:
        planned = checkpoint_offsets(settings.checkpoint_root / status.name)
        lags = {t: lag(end_offsets[t], o) for t, o in planned.items() if t in end_offsets}
        rows.append(
            {
                "query": status.name,
                "state": status.state,
                "rows_per_s": status.processed_rows_per_s,
                "batch": status.batch,
                "updated_s": round(now - status.updated, 1),
                "lag": sum(lags.values()) if lags else None,
                "topics": sorted(lags),
            }
        )
    return rows
