"""Helpers the tests share: running the CLI as a user does, and finding free ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    inherit_settings: bool = True,
    timeout_s: float = 300,
) -> CliResult:
    """Run `python -m statestream ARGS` in a child process, with extra environment variables.

    `inherit_settings=False` drops the STATESTREAM_* variables of this process first. Tables
    are printed 200 columns wide, so no cell is wrapped.
    """
    base = {
        key: value
        for key, value in os.environ.items()
        if inherit_settings or not key.startswith("STATESTREAM_")
    }
    done = subprocess.run(
        [sys.executable, "-m", "statestream", *args],
        env={**base, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports nobody listens on right now."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def read_committed(settings, topic: str, timeout_s: float = 60.0) -> list[bytes]:
    """Every value a `read_committed` consumer finds on `topic`, from the start to the end."""
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer(
        {
            **settings.kafka.client_config(),
            "group.id": f"reader-{topic}-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.subscribe([topic])
        values: list[bytes] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: no end after {timeout_s} s")
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                if message.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {topic}: {message.error().str()}")
                at_end.add(message.partition())
                continue
            values.append(message.value())
        return values
    finally:
        consumer.close()


def influx_query(settings, q: str, database: str | None = "") -> list[dict]:
    """Rows of an InfluxQL query as dicts (times in µs); `database` "" is the settings' one."""
    import requests

    influx = settings.influx
    params = {"q": q, "epoch": "u"}
    if database is not None:
        params["db"] = database or influx.database
    password = influx.password.get_secret_value() if influx.password else ""
    response = requests.post(
        f"{influx.url}/query", params=params, auth=(influx.username, password), timeout=30
    )
    response.raise_for_status()
    rows = []
    for result in response.json()["results"]:
        assert "error" not in result, result["error"]
        for series in result.get("series", []):
            rows += [dict(zip(series["columns"], v, strict=True)) for v in series["values"]]
    return rows
