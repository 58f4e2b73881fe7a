"""`InfluxWriter` on the real InfluxDB: sized requests, refused points found, outages waited."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests
from pydantic import SecretStr

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.sinks import Backoff, InfluxWriter, Point, WriteCancelled
from tests.support import free_ports

pytestmark = pytest.mark.integration


@pytest.fixture
def database(local_services: Settings, unique_name: str) -> Iterator[str]:
    """A database name of this test alone, dropped at the end (the writer creates it)."""
    yield unique_name
    _query(local_services, f'DROP DATABASE "{unique_name}"')


def _query(settings: Settings, q: str, database: str | None = None) -> list[list]:
    influx = settings.influx
    assert influx.password is not None
    response = requests.post(
        f"{influx.url}/query",
        params={"q": q, "db": database or "", "epoch": "ms"},
        auth=(influx.username, influx.password.get_secret_value()),
        timeout=30,
    )
    response.raise_for_status()
    result = response.json()["results"][0]
    return result["series"][0]["values"] if "series" in result else []


def _points(n: int, series: str = "machine_data,quantity=q,thing=R") -> list[Point]:
    return [Point(series, f"result={float(i)}", 1_000 + i) for i in range(n)]


def test_points_are_written_in_sized_requests_and_the_database_created(
    local_services: Settings, database: str
) -> None:
    writer = InfluxWriter(local_services.influx, database=database, points_per_request=300)
    outcome = writer.write(_points(1000))
    assert (outcome.written, outcome.rejected, outcome.requests) == (1000, [], 4)
    again = writer.write(_points(1000))  # the same points again overwrite, double nothing
    assert again.written == 1000
    rows = _query(local_services, "SELECT result FROM machine_data", database)
    assert rows == [[1_000 + i, float(i)] for i in range(1000)]


def test_a_point_influxdb_refuses_is_found_and_the_others_written(
    local_services: Settings, database: str
) -> None:
    writer = InfluxWriter(local_services.influx, database=database, points_per_request=64)
    writer.ensure_database()
    conflicting = Point("other,thing=R", "result=1i", 5)  # an integer field …
    assert writer.write([conflicting]).written == 1
    points = [*_points(50), Point("other,thing=R", "result=2.5", 6), *_points(10, "m2,t=x")]
    outcome = writer.write(points)  # … refuses a float of the same field
    assert outcome.written == 60
    [(index, reason)] = outcome.rejected
    assert index == 50 and "field type conflict" in reason
    assert len(_query(local_services, "SELECT result FROM machine_data", database)) == 50


def test_refused_credentials_are_one_clear_error(local_services: Settings, database: str) -> None:
    wrong = local_services.influx.model_copy(update={"password": SecretStr("wrong")})
    writer = InfluxWriter(wrong, database=database)
    with pytest.raises(ServiceError, match="refuses"):
        writer.write(_points(1))


def test_a_write_waits_while_nothing_answers_until_cancelled(local_services: Settings) -> None:
    [port] = free_ports(1)
    nowhere = local_services.influx.model_copy(update={"url": f"http://127.0.0.1:{port}"})
    writer = InfluxWriter(nowhere, backoff=Backoff(0.05, 0.2), timeout_s=1)
    started = time.monotonic()  # before the timer starts, or the wait may measure under 1 s
    threading.Timer(1.0, writer.cancel).start()
    with pytest.raises(WriteCancelled):
        writer.write(_points(3), label="batch 9")
    assert time.monotonic() - started >= 1.0
