"""The streaming queries' Kafka lag as an InfluxDB series, written while the dashboard runs.

Measurement `query_lag`: tags `query` and `topic`; fields `lag` (the query's lag on the topic,
summed over its partitions) and `partition_<n>` (each partition's); time: the health poll,
rounded down to `interval_s` (10 s), so that two dashboards write the same points, not twice as
many. Grafana's dashboard has a panel of it (`grafana/dashboards/`).

Why the dashboard writes it: its Kafka feed is the one process that already reads, on a timer,
every running query's committed offsets and the topics' end offsets (for the health panel). A
Spark driver's Python hears of a run only when it starts, idles or ends (each batch's progress
stays in the JVM: `jobs.status`), so a series written there would need a thread, a Kafka client
and an InfluxDB client in every driver. The price: there is no series while no dashboard runs
(`statestream demo` runs one).

Best effort: the points are written on a thread of their own, one request per interval; a set
not yet written is replaced by a newer one; a failed write is logged once (and once more when
writes succeed again) and never holds up the feed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping

import requests
from requests.exceptions import RequestException

from statestream.config import InfluxSettings
from statestream.jobs.lag import QueryLag
from statestream.sinks.line_protocol import BadRecord, Point, PointBuilder, PointShape, lines_body

log = logging.getLogger(__name__)

MEASUREMENT = "query_lag"
INTERVAL_S = 10.0
TIMEOUT_S = 5.0


def lag_points(lags: Mapping[str, QueryLag], time_ms: int) -> list[Point]:
    """A point per query and topic: the topic's lag and each partition's.

    >>> [point] = lag_points({"join": QueryLag({"machine.data": {0: 3, 1: 4}})}, 1000)
    >>> point.line("ms")
    'query_lag,query=join,topic=machine.data lag=7.0,partition_0=3.0,partition_1=4.0 1000'
    """
    points = []
    for query, found in sorted(lags.items()):
        for topic, partitions in sorted(found.topics.items()):
            fields = {f"partition_{p}": n for p, n in sorted(partitions.items())}
            record = {"query": query, "topic": topic, "lag": sum(fields.values()), **fields}
            shape = PointShape("", MEASUREMENT, ("query", "topic"), ("lag", *fields), "time")
            try:
                points += PointBuilder([shape]).points(
                    MEASUREMENT, json.dumps({**record, "time": time_ms})
                )
            except BadRecord:  # a name line protocol cannot carry
                continue
    return points


class LagSeries:
    """Writes `lag_points` to InfluxDB on a daemon thread, at most once per `interval_s`."""

    def __init__(self, influx: InfluxSettings, interval_s: float = INTERVAL_S) -> None:
        self.influx = influx
        self.interval_s = interval_s
        self._pending: list[Point] = []
        self._last_ms = -1
        self._failing = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dashboard-lag-series", daemon=True)
        self._session = requests.Session()
        if influx.password is not None:
            self._session.auth = (influx.username, influx.password.get_secret_value())

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = TIMEOUT_S) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._session.close()

    def offer(self, lags: Mapping[str, QueryLag], now_s: float) -> None:
        """The queries' lags at `now_s` (epoch seconds); written unless this interval's are."""
        time_ms = int(now_s // self.interval_s * self.interval_s * 1000)
        if time_ms <= self._last_ms or not lags:
            return
        self._last_ms = time_ms
        with self._lock:
            self._pending = lag_points(lags, time_ms)
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                points, self._pending = self._pending, []
            if points and not self._stop.is_set():
                self._report(self.write(points))

    def write(self, points: list[Point]) -> str | None:
        """One request with `points`: None if written, else what went wrong."""
        body, precision = lines_body(points)
        params = {"db": self.influx.database, "precision": precision}
        try:
            response = self._session.post(
                f"{self.influx.url}/write", params=params, data=body, timeout=TIMEOUT_S
            )
        except RequestException as exc:
            return f"no answer ({type(exc).__name__})"
        if response.status_code == 204:
            return None
        return f"HTTP {response.status_code}: {' '.join(response.text.split())[:200]}"

    def _report(self, problem: str | None) -> None:
        if problem is not None and not self._failing:
            log.warning(
                "the queries' lag is not written to InfluxDB %s (%s); the dashboard goes on",
                self.influx.url,
                problem,
            )
        elif problem is None and self._failing:
            log.info("the queries' lag is written to InfluxDB %s again", self.influx.url)
        self._failing = problem is not None
