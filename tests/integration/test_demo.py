"""`statestream demo` runs the whole pipeline on the local services, and Ctrl-C stops all of it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from statestream.config import Settings, load_settings
from statestream.demo import HFP_FILTER
from statestream.ingest import SAMPLE_FILE
from tests.support import (
    free_ports,
    influx_query,
    read_committed,
    sigint_ignored,
    start_in_the_background,
)

pytestmark = pytest.mark.integration


def _isolated(unique_name: str, tmp_path: Path) -> dict[str, str]:
    """Settings of a demo that shares the services but no topic, database or checkpoint."""
    (port,) = free_ports(1)
    names = ("machine_data", "machine_out", "dead_letter", "late", "stats", "alerts",
             "vehicle_positions", "vehicle_cells", "vehicle_alerts")  # fmt: skip
    return {
        **{f"STATESTREAM_TOPICS__{n.upper()}": f"{unique_name}.{n}" for n in names},
        "STATESTREAM_SPARK__CHECKPOINT_ROOT": str(tmp_path / "checkpoints"),
        "STATESTREAM_INFLUX__DATABASE": unique_name,
        "STATESTREAM_DASHBOARD__PORT": str(port),
        "STATESTREAM_MQTT__TOPIC": f"test/{unique_name}",
        "STATESTREAM_INGEST__PROCESSORS": json.dumps(  # vehicles on topics of its own, too
            {f"test/{unique_name}": "machine", f"test/{unique_name}{HFP_FILTER}": "vehicles"}
        ),
        "STATESTREAM_INGEST__CLIENT_ID": unique_name,
    }


def _start_demo(
    environment: dict[str, str], things: int, vehicles: bool = False, background: bool = False
) -> subprocess.Popen:
    """`statestream demo` at 50 rows/s, its output (stdout and stderr) on a pipe; with the
    vehicle use case (simulator and queries) only if `vehicles`; if `background`, started as a
    script's `statestream demo &` (SIGINT ignored, a process group of its own)."""
    options = ["--rate", "50", "--things", str(things)]
    options.append("--vehicles" if vehicles else "--no-vehicles")
    command = [sys.executable, "-m", "statestream", "demo", *options]
    output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    if background:
        return start_in_the_background(command, env=environment, **output)
    return subprocess.Popen(command, env=environment, **output)


def _json(address: str) -> dict:
    with urllib.request.urlopen(address, timeout=10) as answer:
        return json.load(answer)


def _wait_for(condition, timeout_s: float, what: str, demo: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert demo.poll() is None, f"the demo ended while waiting for {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout_s:.0f} s"
        time.sleep(0.5)


def _records_of_an_earlier_demo(settings: Settings) -> None:
    """What an earlier demo leaves on the data topic: its machines' times ran ahead of the clock.

    A demo that took them up would find the new records late."""
    things = {json.loads(line)["Thing"] for line in SAMPLE_FILE.read_text().splitlines()}
    ahead_ms = (time.time() + 86_400) * 1000
    producer = Producer(settings.kafka.client_config())
    for thing in things:
        for quantity in ("actSpeed_C11", "vaTorque_C11"):
            record = {"thing": thing, "quantity": quantity, "phenomenonTime": ahead_ms, "result": 1}
            producer.produce(
                settings.topics.machine_data, key=f"{thing}.{quantity}", value=json.dumps(record)
            )
    producer.flush(30)


def test_demo_runs_every_part_and_stops_cleanly(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    environment = {**os.environ, **_isolated(unique_name, tmp_path), "COLUMNS": "200"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in environment.items():
            patch.setenv(key, value)
        settings = load_settings()
    _records_of_an_earlier_demo(settings)
    pipeline_log = settings.paths.log_dir / "demo-pipeline.log"  # appended to by each demo
    dashboard_log = settings.paths.log_dir / "demo-dashboard.log"
    logged_before = {log: log.stat().st_size if log.exists() else 0
                     for log in (pipeline_log, dashboard_log)}  # fmt: skip
    demo = _start_demo(environment, things=3, vehicles=True, background=True)
    try:
        _wait_for(
            lambda: len(read_committed(settings, settings.topics.machine_out)) > 0,
            300,
            "pair on the output topic",
            demo,
        )
        _wait_for(
            lambda: influx_query(settings, "SELECT count(result) FROM machine_out"),
            120,
            "joined point in InfluxDB",
            demo,
        )
        _wait_for(  # the vehicle use case: simulated buses → connector → run geo
            lambda: read_committed(settings, settings.topics.vehicle_cells, timeout_s=10),
            300,
            "cell result of the vehicles",
            demo,
        )
        address = f"http://localhost:{settings.dashboard.port}/"
        for path in ("", "fleet", "vehicles"):
            with urllib.request.urlopen(address + path, timeout=10) as page:
                assert page.status == 200
        _wait_for(  # … and on the map: the dashboard's cells on display
            lambda: _json(address + "api/vehicles")["results"], 60, "cell on the map", demo
        )
        _wait_for(lambda: _json(address + "api/fleet")["rows"], 60, "machine in the fleet", demo)
        assert not sigint_ignored(demo.pid)  # started as `statestream demo &`: taken back
    finally:
        parts = _descendants(demo.pid)
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C; the parts have sessions of their own
        output, _ = demo.communicate(timeout=180)
        left = _left_after_the_demo(parts)
        _kill_what_is_left(left)
    assert not left, f"still running after the demo ended: {_described(left)}"
    assert demo.returncode == 0, output
    for part in ("vehicle-simulator", "simulator", "pipeline", "connector", "dashboard"):
        assert f"stopping {part}" in output
    this_run, dashboard_run = (_appended(log, logged_before[log]) for log in logged_before)
    # one SIGINT: a second would have been "stop at once" (its feed left running, a trace)
    assert "dashboard stopped" in dashboard_run and "Traceback" not in dashboard_run, dashboard_run
    for query in ("join", "stats", "sink_influx", "geo", "bunching"):
        assert f"query {query} stopped" in this_run
    # Ctrl-C stops each query: none ends with an error (PySpark's handler cancelled all jobs
    # first, and each query with a batch running logged that it terminated with SPARK_JOB_CANCELLED)
    assert "terminated with error" not in this_run
    assert f"dashboard: http://localhost:{settings.dashboard.port}/" in output
    late = read_committed(settings, settings.topics.late, timeout_s=10)
    machines_late = [r for r in late if json.loads(r)["stage"] not in ("geo", "bunching")]
    assert machines_late == []  # a fresh start (a vehicle out of a long tunnel may be late)
    with pytest.raises(OSError):
        urllib.request.urlopen(address, timeout=5)
    influx_query(settings, f'DROP DATABASE "{unique_name}"', database=None)


def _appended(log: Path, offset: int) -> str:
    with log.open("rb") as opened:
        opened.seek(offset)
        return opened.read().decode(errors="replace")


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, their children, …), from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":  # a zombie has ended; only its parent has not reaped it yet
            alive.add(pid)
    return alive


def _described(pids: set[int]) -> str:
    """Each process of `pids` with its command line, for a failure's message."""
    lines = []
    for pid in sorted(pids):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            command = b"(ended)"
        lines.append(f"{pid}: {command.decode(errors='replace')[:300]}")
    return "\n".join(lines)


def _left_after_the_demo(parts: set[int], timeout_s: float = 120) -> set[int]:
    """The parts still running `timeout_s` after the demo ended (each part's own stop)."""
    deadline = time.monotonic() + timeout_s
    while _alive(parts) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _alive(parts)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_a_demo_ended_by_a_signal_leaves_no_process_behind(
    local_services: Settings, unique_name: str, tmp_path: Path, signum: int
) -> None:
    """SIGTERM (a service manager, `timeout`) stops the parts in order, as Ctrl-C does (and as
    SIGHUP, a closed terminal, does: the same handler, tests/cli/test_demo_cmd.py); after
    SIGKILL the parts notice that the demo is gone and stop themselves, as cleanly. (Ctrl-C to
    a demo started in the background: the test above.)"""
    environment = {**os.environ, **_isolated(unique_name, tmp_path), "COLUMNS": "200"}
    dashboard_log = local_services.paths.log_dir / "demo-dashboard.log"  # appended to by each demo
    logged_before = dashboard_log.stat().st_size if dashboard_log.exists() else 0
    demo = _start_demo(environment, things=2)
    assert demo.stdout is not None
    lines = []
    for line in demo.stdout:  # until every part runs
        lines.append(line)
        if "Ctrl-C stops the demo" in line:
            break
    parts = _descendants(demo.pid)
    assert len(parts) >= 4, "".join(lines)  # the four parts, Spark's JVM and workers
    try:
        demo.send_signal(signum)
        output, _ = demo.communicate(timeout=180)
        if signum != signal.SIGKILL:
            assert demo.returncode == 0, output
            assert "stopping simulator" in output and "demo stopped" in output
        left = _left_after_the_demo(parts)
        assert not left, f"still running after the demo ended: {_described(left)}"
        this_run = _appended(dashboard_log, logged_before)
        assert "dashboard stopped" in this_run and "Traceback" not in this_run, this_run
    finally:
        _kill_what_is_left(parts | _descendants(demo.pid))
    influx_query(local_services, f'DROP DATABASE "{unique_name}"', database=None)


def _kill_what_is_left(processes: set[int]) -> None:
    """Never leave a part to the rest of the suite."""
    for pid in _alive(processes):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
