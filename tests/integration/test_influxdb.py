"""The local InfluxDB 1.x: write and query with statestream's credentials; others refused; the
services' own checks and start-up statements, which call its HTTP API directly."""

from __future__ import annotations

import pytest
import requests
from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError
from pydantic import SecretStr

from statestream.config import Settings
from statestream.errors import ServiceError
from statestream.services.influxdb import InfluxServer, influx_health
from tests.support import free_ports

pytestmark = pytest.mark.integration


def _client(settings: Settings, database: str) -> InfluxDBClient:
    influx = settings.influx
    assert influx.password is not None
    return InfluxDBClient(
        host=influx.host,
        port=influx.port,
        username=influx.username,
        password=influx.password.get_secret_value(),
        database=database,
    )


def test_the_statestream_database_exists(local_services: Settings) -> None:
    databases = {d["name"] for d in _client(local_services, "").get_list_database()}
    assert local_services.influx.database in databases


def test_write_then_query(local_services: Settings, unique_name: str) -> None:
    client = _client(local_services, unique_name)
    client.create_database(unique_name)
    try:
        points = [
            {
                "measurement": "machine",
                "tags": {"thing": "R0815"},
                "time": 1554096380468 + i * 1000,
                "fields": {"vaTorque_C11": float(i)},
            }
            for i in range(5)
        ]
        assert client.write_points(points, time_precision="ms")
        rows = list(client.query('SELECT "vaTorque_C11" FROM "machine"').get_points())
        assert [row["vaTorque_C11"] for row in rows] == [0.0, 1.0, 2.0, 3.0, 4.0]
    finally:
        client.drop_database(unique_name)


def test_unauthenticated_and_wrong_password_are_refused(local_services: Settings) -> None:
    url = f"{local_services.influx.url}/query"
    anonymous = requests.get(url, params={"q": "SHOW DATABASES"}, timeout=10)
    assert anonymous.status_code == 401
    wrong = requests.get(
        url,
        params={"q": "SHOW DATABASES", "u": local_services.influx.username, "p": "wrong"},
        timeout=10,
    )
    assert wrong.status_code == 401
    with pytest.raises(InfluxDBClientError) as caught:
        InfluxDBClient(host=local_services.influx.host, port=local_services.influx.port).query(
            "SHOW DATABASES"
        )
    assert caught.value.code == 401


def test_the_services_health_check_says_why_influxdb_refuses(local_services: Settings) -> None:
    """`services status`'s check, by HTTP: none with statestream's password, the refusal with
    a wrong one, no answer where nothing listens."""
    influx = local_services.influx
    assert influx_health(influx) is None
    wrong = influx.model_copy(update={"password": SecretStr("wrong")})
    assert influx_health(wrong) == "query refused (401: authorization failed)"
    nobody = influx.model_copy(update={"url": f"http://127.0.0.1:{free_ports(1)[0]}"})
    assert (reason := influx_health(nobody)) and reason.startswith("no answer from http://")


def test_start_checks_refuse_another_password_and_make_the_database(
    local_services: Settings, unique_name: str
) -> None:
    """`services up` on an InfluxDB whose admin has another password: one clear error, not a
    user created; with the right one, the database is created (again: idempotent)."""
    wrong = local_services.model_copy(
        update={"influx": local_services.influx.model_copy(update={"password": SecretStr("wrong")})}
    )
    server = InfluxServer(wrong)
    assert server.answers()
    with pytest.raises(ServiceError, match=r"refuses user .* another password"):
        server.after_start()
    right = local_services.model_copy(
        update={"influx": local_services.influx.model_copy(update={"database": unique_name})}
    )
    try:
        InfluxServer(right).after_start()
        InfluxServer(right).after_start()
        names = {d["name"] for d in _client(local_services, "").get_list_database()}
        assert unique_name in names
    finally:
        _client(local_services, "").drop_database(unique_name)
