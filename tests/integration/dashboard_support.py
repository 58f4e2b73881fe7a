"""What the browser tests of the dashboard share: a `statestream dashboard` process on topics and
an InfluxDB database of its own, headless Chromium, where screenshots go."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests
from confluent_kafka.admin import AdminClient

from statestream.config import Settings, settings_environment
from statestream.services.topics import create_topics
from tests.support import free_ports

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Dashboard:
    url: str
    token: str
    settings: Settings


def dashboard_settings(settings: Settings, name: str) -> Settings:
    """Settings whose dashboard topics and InfluxDB database are new ones named after `name`."""
    topics = settings.topics.model_copy(
        update={
            "machine_data": f"{name}.data",
            "machine_out": f"{name}.out",
            "stats": f"{name}.stats",
            "alerts": f"{name}.alerts",
            "late": f"{name}.late",
            "dead_letter": f"{name}.deadletter",
            "vehicle_positions": f"{name}.positions",
            "vehicle_cells": f"{name}.cells",
            "vehicle_alerts": f"{name}.bunching",
            "machine_quantities": f"{name}.quantities",
            "cleanup_policy": "delete",
        }
    )
    influx = settings.influx.model_copy(update={"database": name})
    return settings.model_copy(update={"topics": topics, "influx": influx})


def influx_query(settings: Settings, query: str) -> requests.Response:
    assert settings.influx.password is not None
    auth = (settings.influx.username, settings.influx.password.get_secret_value())
    return requests.post(f"{settings.influx.url}/query", params={"q": query}, auth=auth, timeout=10)


def write_points(settings: Settings, lines: list[str]) -> None:
    """Line-protocol `lines` (times in ms) into the settings' InfluxDB database, made if new."""
    influx_query(settings, f'CREATE DATABASE "{settings.influx.database}"').raise_for_status()
    assert settings.influx.password is not None
    written = requests.post(
        f"{settings.influx.url}/write",
        params={"db": settings.influx.database, "precision": "ms"},
        data="\n".join(lines),
        auth=(settings.influx.username, settings.influx.password.get_secret_value()),
        timeout=10,
    )
    assert written.status_code == 204, written.text


def _wait_until_reading(url: str, token: str, process: subprocess.Popen[str]) -> None:
    """Until the dashboard answers and its consumer has every topic assigned."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"dashboard exited: {process.stdout.read()}")  # type: ignore[union-attr]
        try:
            health = requests.get(f"{url}api/health", params={"token": token}, timeout=2).json()
            topics = health.get("topics", [])
            if topics and all(t["assigned"] and t["lag"] is not None for t in topics):
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError("dashboard did not start reading its topics within 60 s")


def _topics_of(settings: Settings) -> list[str]:
    t = settings.topics
    return [t.machine_data, t.machine_out, t.stats, t.alerts, t.late, t.dead_letter,
            t.vehicle_positions, t.vehicle_cells, t.vehicle_alerts]  # fmt: skip


@contextlib.contextmanager
def running_dashboard(settings: Settings, prepare=None) -> Iterator[Dashboard]:
    """A dashboard process with a token on topics and a database of its own (`prepare(settings)`
    runs once they exist, before it starts); both are deleted afterwards."""
    name = f"test_{uuid.uuid4().hex[:10]}"
    settings = dashboard_settings(settings, name)
    create_topics(settings)
    if prepare is not None:
        prepare(settings)
    port, token = free_ports(1)[0], f"tok-{uuid.uuid4().hex}"
    environment = {**os.environ, **settings_environment(settings)}
    environment.update({"STATESTREAM_DASHBOARD__PORT": str(port)})
    environment.update({"STATESTREAM_DASHBOARD__TOKEN": token})
    process = subprocess.Popen(
        [sys.executable, "-m", "statestream", "dashboard", "--port", str(port)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://localhost:{port}/"
    try:
        _wait_until_reading(url, token, process)
        yield Dashboard(url, token, settings)
    finally:
        output = _stopped(process)
        AdminClient(settings.kafka.client_config()).delete_topics(_topics_of(settings))
        influx_query(settings, f'DROP DATABASE "{name}"')
    # every module's dashboard, after its feed has read and its pages were served, stops cleanly
    assert process.returncode == 0 and "dashboard stopped" in output, output
    assert "Traceback" not in output, output


def _stopped(process: subprocess.Popen[str]) -> str:
    """Ctrl-C the dashboard; its output (killed if it does not end within 30 s)."""
    process.send_signal(signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        output += "\n(did not end within 30 s of Ctrl-C: killed)"
    return output


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Headless Chromium (playwright), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, url: str, ready: str, errors: list[str] | None = None):
    """A page at `url` once the JavaScript expression `ready` holds; page errors go to `errors`."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    seen: list[str] = [] if errors is None else errors
    page.on("pageerror", lambda error: seen.append(str(error)))
    page.goto(url)
    try:
        page.wait_for_function(ready)
    except PlaywrightTimeout:
        page.close()
        raise AssertionError(f"the page at {url} did not get ready; page errors: {seen}") from None
    return page
