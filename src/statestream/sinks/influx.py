"""Points into InfluxDB 1.x over HTTP (`/write`, line protocol), waiting out outages.

    writer = InfluxWriter(settings.influx, points_per_request=10_000)
    outcome = writer.write(points, label="batch 7")   # returns once every point is written

`write` sends the points in requests of `points_per_request` and returns only when InfluxDB has
taken every one of them, or has refused a point for good: an outage (no answer, a timeout, a
5xx) is waited out with exponential backoff and a warning per attempt, so a streaming query that
writes through it does not move past unwritten data. A request InfluxDB refuses as bad (400, 413)
is split in halves until the refused points are found; they come back in the outcome with
InfluxDB's reason (for a dead-letter topic) and the rest is written. Refused credentials raise
`ServiceError`; `cancel()` (or setting the `cancelled` event passed in) makes a waiting `write`
raise `WriteCancelled`. A missing database is
created. Writing a point again overwrites it (same series and time), so retries double nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import requests
from requests.exceptions import RequestException

from statestream.config import InfluxSettings
from statestream.errors import ServiceError
from statestream.sinks.line_protocol import Point, lines_body

log = logging.getLogger("statestream.sink.influx")

_SPLIT_STATUSES = frozenset({400, 413})  # the request's content is refused: find the bad points
_AUTH_STATUSES = frozenset({401, 403})


class WriteCancelled(Exception):
    """`cancel()` was called while a write waited for InfluxDB."""


@dataclass(frozen=True)
class Backoff:
    """Waits between attempts: `initial_s`, doubling up to `max_s`."""

    initial_s: float = 0.5
    max_s: float = 10.0

    def delay(self, attempt: int) -> float:
        return min(self.max_s, self.initial_s * 2 ** min(attempt, 30))


@dataclass
class WriteOutcome:
    """What one `write` did: points written, points refused (index, reason), time spent waiting."""

    written: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    retries: int = 0
    waited_s: float = 0.0
    requests: int = 0


class InfluxWriter:
    """Writes points to one InfluxDB 1.x database; see the module docstring."""

    def __init__(
        self,
        influx: InfluxSettings,
        *,
        database: str | None = None,
        points_per_request: int = 10_000,
        backoff: Backoff | None = None,
        timeout_s: float = 30.0,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.influx = influx
        self.database = database or influx.database
        self.points_per_request = points_per_request
        self.backoff = backoff or Backoff()
        self.timeout_s = timeout_s
        self._session = requests.Session()
        if influx.password is not None:
            self._session.auth = (influx.username, influx.password.get_secret_value())
        self._cancelled = cancelled or threading.Event()
        self._database_ready = False

    def cancel(self) -> None:
        """Make a `write` that waits for InfluxDB give up (raises `WriteCancelled`)."""
        self._cancelled.set()

    def close(self) -> None:
        self._session.close()

    def ensure_database(self) -> None:
        """Create the database unless it exists (CREATE DATABASE changes nothing if it does)."""
        response = self._session.post(
            f"{self.influx.url}/query",
            params={"q": f'CREATE DATABASE "{_quoted(self.database)}"'},
            timeout=self.timeout_s,
        )
        if response.status_code >= 500:
            response.raise_for_status()  # a RequestException: InfluxDB is not ready, wait
        if response.status_code >= 400:
            raise ServiceError(
                f"InfluxDB {self.influx.url} refuses to create database {self.database!r} for "
                f"user {self.influx.username!r}: {_error_text(response)}"
            )
        self._database_ready = True

    def write(self, points: Sequence[Point], *, label: str = "write") -> WriteOutcome:
        """Write every point; return once all are written or refused (see the module docstring).

        `label` names the work in the warnings logged while InfluxDB is unavailable.
        """
        outcome = WriteOutcome()
        size = self.points_per_request
        for start in range(0, len(points), size):
            chunk = range(start, min(start + size, len(points)))
            self._write_chunk(points, chunk, outcome, label)
        return outcome

    def _write_chunk(
        self, points: Sequence[Point], chunk: range, outcome: WriteOutcome, label: str
    ) -> None:
        """Write points[chunk]; a refused request is split until each refused point is alone."""
        status, reason = self._post([points[i] for i in chunk], outcome, label, len(points))
        if status is None:
            outcome.written += len(chunk)
        elif len(chunk) == 1:
            outcome.rejected.append((chunk.start, reason))
        else:
            middle = chunk.start + len(chunk) // 2
            self._write_chunk(points, range(chunk.start, middle), outcome, label)
            self._write_chunk(points, range(middle, chunk.stop), outcome, label)

    def _post(
        self, points: list[Point], outcome: WriteOutcome, label: str, total: int
    ) -> tuple[int | None, str]:
        """POST one request until InfluxDB answers it: (None, "") if written, else the refusal."""
        body, precision = lines_body(points)
        params = {"db": self.database, "precision": precision}
        attempt, down_since = 0, 0.0
        while True:
            problem = self._try_post(body, params, outcome)
            if problem is None or isinstance(problem, tuple):
                if attempt:
                    log.warning(
                        "InfluxDB %s answers again after %.1f s; %s goes on",
                        self.influx.url,
                        time.monotonic() - down_since,
                        label,
                    )
                return problem or (None, "")
            if not attempt:
                down_since = time.monotonic()
            delay = self.backoff.delay(attempt)
            attempt += 1
            outcome.retries += 1
            log.warning(
                "InfluxDB %s unavailable (%s); %s waits with %d of %d points unwritten, "
                "retry %d in %.1f s",
                self.influx.url,
                problem,
                label,
                total - outcome.written - len(outcome.rejected),
                total,
                attempt,
                delay,
            )
            if self._cancelled.wait(delay):
                raise WriteCancelled(f"{label}: cancelled while InfluxDB was unavailable")
            outcome.waited_s += delay

    def _try_post(
        self, body: bytes, params: dict[str, str], outcome: WriteOutcome
    ) -> tuple[int, str] | str | None:
        """One attempt: None if written, (status, reason) if refused for good, else a problem."""
        try:
            if not self._database_ready:
                self.ensure_database()
            outcome.requests += 1
            response = self._session.post(
                f"{self.influx.url}/write", params=params, data=body, timeout=self.timeout_s
            )
        except RequestException as exc:
            return f"no answer: {type(exc).__name__}"
        status = response.status_code
        if status == 204:
            return None
        text = _error_text(response)
        if status in _AUTH_STATUSES:
            raise ServiceError(
                f"InfluxDB {self.influx.url} refuses user {self.influx.username!r}: {text}; "
                "check STATESTREAM_INFLUX__USERNAME and STATESTREAM_INFLUX__PASSWORD"
            )
        if status == 404 and "database not found" in text:
            self._database_ready = False
            return f"database {self.database!r} not found: creating it"
        if status in _SPLIT_STATUSES:
            return (status, f"InfluxDB refused the point ({status}): {text}")
        return f"HTTP {status}: {text}"


def _error_text(response: requests.Response) -> str:
    """InfluxDB's error message: its X-Influxdb-Error header, else the body, on one line."""
    text = response.headers.get("X-Influxdb-Error") or response.text or response.reason or ""
    return " ".join(text.split())[:500]


def _quoted(identifier: str) -> str:
    return identifier.replace("\\", "\\\\").replace('"', '\\"')


def influx_rows(influx: InfluxSettings, query: str, database: str | None = "") -> list[dict]:
    """The rows of an InfluxQL query as dicts, times in epoch µs; `database` "" is the
    settings' one, None none (for `SHOW DATABASES`, `DROP DATABASE …`)."""
    return [row for chunk in influx_row_chunks(influx, query, database) for row in chunk]


def influx_row_chunks(
    influx: InfluxSettings, query: str, database: str | None = ""
) -> Iterator[list[dict]]:
    """The rows of an InfluxQL query in chunks of `INFLUX_CHUNK_ROWS`, each as it arrives: a
    check of millions of points keeps what it needs of each chunk, not the rows."""
    params = {"q": query, "epoch": "u", "chunked": "true", "chunk_size": str(INFLUX_CHUNK_ROWS)}
    if database is not None:
        params["db"] = database or influx.database
    password = influx.password.get_secret_value() if influx.password else ""
    with requests.post(
        f"{influx.url}/query",
        params=params,
        auth=(influx.username, password),
        timeout=30,
        stream=True,
    ) as response:
        if response.status_code >= 400:
            raise ServiceError(f"InfluxDB {influx.url} refused {query!r}: {_error_text(response)}")
        for line in response.iter_lines():
            if line:
                yield _chunk_rows(json.loads(line), influx.url, query)


INFLUX_CHUNK_ROWS = 10_000


def _chunk_rows(chunk: dict, url: str, query: str) -> list[dict]:
    """The rows of one chunk of a chunked answer (the same shape as a whole answer)."""
    if "error" in chunk:
        raise ServiceError(f"InfluxDB {url}: {chunk['error']} ({query!r})")
    rows: list[dict] = []
    for result in chunk["results"]:
        if "error" in result:
            raise ServiceError(f"InfluxDB {url}: {result['error']} ({query!r})")
        for series in result.get("series", []):
            rows += [dict(zip(series["columns"], v, strict=True)) for v in series["values"]]
    return rows
