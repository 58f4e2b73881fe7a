"""`statestream chaos` refuses services on another machine with one line, before touching any."""

from __future__ import annotations

import pytest

from tests.support import run_cli


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "kafka.example.com:9092", "kafka"),
        ("STATESTREAM_MQTT__HOST", "mqtt.example.com", "mqtt"),
        ("STATESTREAM_INFLUX__URL", "http://influx.example.com:8086", "influx"),
    ],
)
def test_external_services_are_refused(variable: str, value: str, named: str) -> None:
    done = run_cli("chaos", "--minutes", "1", env={variable: value})
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "local services" in lines[0], done.stderr
