"""The dashboard's one Kafka consumer, on a background thread.

It reads the raw, joined, statistics and alert topics and the vehicle cells and bunching alerts
from their end (what happened before the
page opened comes from InfluxDB) and the late and dead-letter topics from their beginning (their
counts are totals), all `read_committed`, so only what the exactly-once jobs committed is shown.
Every `flush_interval_s` it hands one `FeedBatch` to `deliver`: the chart points (thinned per
series), the window results and alerts, the cells and bunching alerts, and every few seconds the
pipeline's health: the topics, the queries with their Kafka lag (also written to InfluxDB:
`lag_series`) and the histogram of the pairs' end-to-end latency (`latency`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from statestream.config import Settings
from statestream.dashboard.health import (
    COUNTED_ROLES,
    TopicFigures,
    query_health,
    reason_of,
    running_queries,
)
from statestream.dashboard.lag_series import LagSeries
from statestream.dashboard.latency import LatencyHistogram, pair_latency_s
from statestream.dashboard.messages import (
    RecordShaper,
    SeriesPoint,
    UnreadableRecord,
    WindowResult,
    json_object,
    series_messages,
)
from statestream.dashboard.vehicles import BunchingAlert, CellResult, bunching_alert, cell_result
from statestream.jobs.lag import (
    PartitionOffsets,
    TopicOffsets,
    end_offsets,
    lag,
    partitions_to_ask,
    query_lag,
)

logger = logging.getLogger(__name__)

POINTS_PER_SERIES_PER_FLUSH = 25
TOPIC_RETRY_S = 5.0
MAX_MESSAGES_PER_POLL = 2000
QUERY_ENDS_TIMEOUT_S = 1.0  # for the end offsets of topics the queries read and the feed does not


@dataclass
class FeedBatch:
    """What the feed read since the last batch, ready for the display."""

    series: list[dict[str, Any]] = field(default_factory=list)
    results: list[WindowResult] = field(default_factory=list)
    alerts: list[WindowResult] = field(default_factory=list)
    health: dict[str, Any] | None = None
    cells: list[CellResult] = field(default_factory=list)
    bunching: list[BunchingAlert] = field(default_factory=list)


def watched_topics(settings: Settings) -> dict[str, str]:
    """topic → role, for the topics the dashboard reads."""
    t = settings.topics
    return {
        t.machine_data: "data",
        t.machine_out: "out",
        t.stats: "stats",
        t.alerts: "alerts",
        t.vehicle_cells: "cells",
        t.vehicle_alerts: "bunching",
        t.late: "late",
        t.dead_letter: "dead_letter",
    }


class KafkaFeed:
    """Reads the dashboard's topics on a daemon thread and delivers a `FeedBatch` per interval."""

    def __init__(
        self,
        settings: Settings,
        deliver: Callable[[FeedBatch], None],
        *,
        flush_interval_s: float = 0.25,
        health_interval_s: float = 2.0,
    ) -> None:
        self.settings = settings
        self.deliver = deliver
        self.flush_interval_s = flush_interval_s
        self.health_interval_s = health_interval_s
        self.shaper = RecordShaper(settings.join.specs)
        self.roles = watched_topics(settings)
        self.figures = {topic: TopicFigures(topic, role) for topic, role in self.roles.items()}
        self._partitions: dict[str, list[int]] = {}
        self._starts: dict[str, PartitionOffsets] = {}
        self.latency = LatencyHistogram()
        self.lag_series = LagSeries(settings.influx)
        self._error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dashboard-kafka-feed", daemon=True)
        self._points: list[SeriesPoint] = []
        self._results: list[WindowResult] = []
        self._alerts: list[WindowResult] = []
        self._cells: list[CellResult] = []
        self._bunching: list[BunchingAlert] = []

    def start(self) -> None:
        self.lag_series.start()
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
        self.lag_series.stop()

    def _run(self) -> None:
        consumer = Consumer(
            {
                **self.settings.kafka.client_config("dashboard"),
                "group.id": f"statestream-dashboard-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "latest",
                "client.id": "statestream-dashboard",
            }
        )
        try:
            self._loop(consumer)
        finally:
            consumer.close()

    def _loop(self, consumer: Consumer) -> None:
        """Read, and hand over a batch per interval, until stopped; an unexpected error is logged,
        shown in the health and does not end the feed."""
        while not self._stop.is_set():
            try:
                self._read(consumer)
            except Exception as exc:
                logger.exception("dashboard feed")
                self._error = f"dashboard feed error: {type(exc).__name__}: {exc}"
                self._stop.wait(1.0)

    def _read(self, consumer: Consumer) -> None:
        next_flush = next_health = next_assign = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_assign and len(self._partitions) < len(self.roles):
                self._assign_new_topics(consumer)
                next_assign = now + TOPIC_RETRY_S
            if not self._partitions:
                self._stop.wait(0.2)
            else:
                for message in consumer.consume(MAX_MESSAGES_PER_POLL, timeout=0.1):
                    self._take(message)
            now = time.monotonic()
            if now >= next_flush:
                health = None
                if now >= next_health:
                    health = self._health(consumer, now)
                    next_health = now + self.health_interval_s
                self._flush(health)
                next_flush = now + self.flush_interval_s

    def _assign_new_topics(self, consumer: Consumer) -> None:
        """Assign the partitions of the watched topics that exist and are not assigned yet."""
        try:
            metadata = consumer.list_topics(timeout=5)
        except KafkaException as exc:
            self._error = f"Kafka does not answer: {exc.args[0].str() if exc.args else exc}"
            return
        self._error = None
        new = []
        for topic, role in self.roles.items():
            found = metadata.topics.get(topic)
            if topic in self._partitions or found is None or found.error is not None:
                continue
            starts = self._start_offsets(consumer, topic, sorted(found.partitions), role)
            if starts is None:
                continue
            self._partitions[topic] = sorted(starts)
            self._starts[topic] = starts
            new += [TopicPartition(topic, p, offset) for p, offset in starts.items()]
        if new:
            consumer.incremental_assign(new)

    def _start_offsets(
        self, consumer: Consumer, topic: str, partitions: list[int], role: str
    ) -> PartitionOffsets | None:
        """Where to start each partition: its end (live topics) or its beginning (counted ones).

        Explicit offsets rather than "end"/"beginning", so that the lag is known from the start.
        """
        starts: PartitionOffsets = {}
        for p in partitions:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except KafkaException:
                return None
            starts[p] = low if role in COUNTED_ROLES else high
        return starts

    def _take(self, message: Any) -> None:
        if message.error():
            self._error = message.error().str()
            return
        topic, raw = message.topic(), message.value()
        figures = self.figures[topic]
        figures.count(1, time.monotonic())
        role = figures.role
        try:
            if role == "out":
                self._take_pair(json_object(raw), message.key())
            elif role == "data":
                if not self.shaper.is_charted_key(message.key()):
                    return
                point = self.shaper.point(raw)
                if point is not None:
                    self._points.append(point)
            elif role == "stats":
                self._results.append(self.shaper.window_result(raw))
            elif role == "alerts":
                self._alerts.append(self.shaper.alert(raw))
            elif role == "cells":
                self._cells.append(cell_result(raw))
            elif role == "bunching":
                self._bunching.append(bunching_alert(raw))
            else:
                figures.last_reason = reason_of(raw) or figures.last_reason
        except UnreadableRecord:
            figures.unreadable += 1

    def _take_pair(self, pair: dict[str, Any], key: bytes | None) -> None:
        """A pair of machine.out: its latency counted, its point charted (if it is)."""
        latency = pair_latency_s(pair, time.time() * 1000.0)
        if latency is not None:
            self.latency.add(latency, time.monotonic())
        if self.shaper.is_charted_key(key):
            point = self.shaper.point_of(pair)
            if point is not None:
                self._points.append(point)

    def _flush(self, health: dict[str, Any] | None) -> None:
        batch = FeedBatch(
            series=series_messages(self._points, POINTS_PER_SERIES_PER_FLUSH),
            results=self._results,
            alerts=self._alerts,
            health=health,
            cells=self._cells,
            bunching=self._bunching,
        )
        self._points, self._results, self._alerts = [], [], []
        self._cells, self._bunching = [], []
        contents = (batch.series, batch.results, batch.alerts, batch.cells, batch.bunching)
        if any(contents) or batch.health:
            self.deliver(batch)

    def _health(self, consumer: Consumer, now: float) -> dict[str, Any]:
        ends: TopicOffsets = {}
        topics = []
        for topic, figures in self.figures.items():
            row: dict[str, Any] = {
                "topic": topic,
                "role": figures.role,
                "assigned": topic in self._partitions,
                "records": figures.records,
                "unreadable": figures.unreadable,
                "last_reason": figures.last_reason,
                "end_offset": None,
                "lag": None,
            }
            if topic in self._partitions:
                ends[topic], row["lag"] = self._end_offsets_and_lag(consumer, topic)
                row["end_offset"] = sum(ends[topic].values())
                if not figures.caught_up and row["lag"] == 0:
                    figures.caught_up = True
                    if figures.role in COUNTED_ROLES:
                        figures.restart_rate()
            row["records_per_s"] = round(figures.rate(now), 1)
            topics.append(row)
        return {
            "kafka_error": self._error,
            "topics": topics,
            "queries": self._queries(consumer, ends),
            "latency": self.latency.snapshot(now),
        }

    def _queries(self, consumer: Consumer, ends: TopicOffsets) -> list[dict[str, Any]]:
        """The running queries' health rows, with their lag; the ends of topics they read and
        the feed does not are asked for, and the lags offered to the InfluxDB series."""
        statuses = running_queries(self.settings)
        committed = [status.committed_offsets() for status in statuses]
        ends = {**ends}
        for topic, found in end_offsets(
            consumer, partitions_to_ask(committed, ends), QUERY_ENDS_TIMEOUT_S
        ).items():
            ends[topic] = {**ends.get(topic, {}), **found}
        lags = [query_lag(offsets, ends) for offsets in committed]
        wall = time.time()
        known = {s.name: q for s, q in zip(statuses, lags, strict=True) if q is not None}
        self.lag_series.offer(known, wall)
        return query_health(statuses, lags, wall)

    def _end_offsets_and_lag(self, consumer: Consumer, topic: str) -> tuple[PartitionOffsets, int]:
        partitions = [TopicPartition(topic, p) for p in self._partitions[topic]]
        ends: PartitionOffsets = {}
        for tp in partitions:
            try:
                high = consumer.get_watermark_offsets(tp, cached=True)[1]
                if high < 0:
                    high = consumer.get_watermark_offsets(tp, timeout=2, cached=False)[1]
            except KafkaException:
                continue
            ends[tp.partition] = high
        positions = dict(self._starts[topic])  # where nothing was read yet
        with contextlib.suppress(KafkaException):
            positions.update(
                {tp.partition: tp.offset for tp in consumer.position(partitions) if tp.offset >= 0}
            )
        return ends, lag(ends, positions)
