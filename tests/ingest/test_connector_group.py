"""The parent of `connect mqtt --instances N`: real child processes, each a small stand-in for
`connect mqtt --member-of` that behaves as its plan says (no broker, no Kafka): the client ids
and share group they get, restarts with the same client id, the errors that stop the group and
the figures it adds up."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from statestream.config import Settings
from statestream.errors import ConfigError, ServiceError
from statestream.ingest import MqttConnector, connector_group
from statestream.ingest.connector_group import (
    ConnectorGroup,
    GroupOptions,
    GroupReport,
    default_share_group,
    member_client_id,
)
from statestream.ingest.connector_instance import CLEAN_STOPS, exit_text
from statestream.ingest.mqtt_connector import shared_subscription

# What an instance does, by its client id's plan: "serve" subscribes and runs until SIGTERM,
# then prints its figures; "refuse" fails as a refused login does; "end soon" subscribes, ends.
INSTANCE = r"""
import json, os, signal, sys, time
from pathlib import Path

args = sys.argv[1:]
client_id = args[args.index("--client-id") + 1]
group = args[args.index("--member-of") + 1]
folder = Path(os.environ["GROUP_TEST_FOLDER"])
with open(folder / f"{client_id}.starts", "a") as starts:
    starts.write(" ".join(args) + "\n")
run = len((folder / f"{client_id}.starts").read_text().splitlines())
plan = json.loads((folder / "plan.json").read_text()).get(client_id, "serve")
stopped = []
signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
if plan == "refuse":
    print("error: the MQTT broker at localhost:8883 refused the login: not authorized", flush=True)
    sys.exit(2)
session = "session resumed" if run > 1 else "new session"
print(f"subscribed to 1 topic filters as {client_id} in share group {group} ({session})",
      file=sys.stderr, flush=True)
if plan == "end soon":
    time.sleep(0.2)
    sys.exit(3)
while not stopped:
    time.sleep(0.02)
print(f"{run * 100} events", flush=True)
figures = {"events": run * 100, "records": run * 400, "dead_letters": 1, "payload_bytes": 9}
print("instance figures: " + json.dumps(figures), flush=True)
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "instance.py").write_text(INSTANCE)
    (tmp_path / "plan.json").write_text("{}")
    monkeypatch.setenv("GROUP_TEST_FOLDER", str(tmp_path))
    return tmp_path


class Run:
    """A group running in a thread, with what it said and its report or error."""

    def __init__(self, group: ConnectorGroup, said: list[str]) -> None:
        self.group, self.said = group, said
        self.stop = threading.Event()
        self.report: GroupReport | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.report = self.group.run(self.stop)
        except BaseException as exc:  # the test looks at it
            self.error = exc

    def wait_for(self, condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, self.said
            time.sleep(0.02)


@contextmanager
def running(folder: Path, instances: int, plan: dict[str, str] | None = None) -> Iterator[Run]:
    (folder / "plan.json").write_text(json.dumps(plan or {}))
    said: list[str] = []
    options = GroupOptions(instances=instances, group="plant", client_id="base", report_every=0)
    command = (sys.executable, str(folder / "instance.py"))
    run = Run(ConnectorGroup(Settings(), options, said.append, command=command), said)
    run.thread.start()
    try:
        yield run
    finally:
        run.stop.set()
        run.thread.join(30)
    assert not run.thread.is_alive()


def _starts(folder: Path, client_id: str) -> list[str]:
    path = folder / f"{client_id}.starts"
    return path.read_text().splitlines() if path.exists() else []


def test_each_instance_has_its_client_id_in_one_share_group_and_the_figures_add_up(
    folder: Path,
) -> None:
    with running(folder, 3) as run:
        run.wait_for(lambda: any(line.startswith("all 3 instances") for line in run.said))
    assert run.error is None and run.report is not None
    for index in (1, 2, 3):
        [args] = _starts(folder, f"base-{index}")
        assert args == f"connect mqtt --member-of plant --client-id base-{index} --report-every 0"
    # the instances' lines come with their names, their subscriptions before the group's line
    ready = run.said.index(
        "all 3 instances subscribed in share group plant (client ids base-1 … base-3)"
    )
    assert {line.split(":")[0] for line in run.said[:ready]} == {
        f"connector-{i}" for i in (1, 2, 3)
    }
    assert (
        "connector-2: subscribed to 1 topic filters as base-2 in share group plant (new session)"
        in run.said
    )
    report = run.report
    assert (report.total("events"), report.total("records"), report.total("dead_letters")) == (
        300,
        1200,
        3,
    )
    assert report.restarts == 0 and report.failed == []
    assert report.summary().startswith(
        "3 instances in share group plant: 300 events → 1,200 records, 3 dead letters in "
    )
    assert "connector-1 100, connector-2 100, connector-3 100)" in report.summary()
    assert "instance figures" not in "\n".join(run.said)  # read by the parent, not echoed


def test_a_killed_instance_is_started_again_with_its_session_and_counted(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connector_group, "RESTART_BACKOFF_S", 0.1)
    with running(folder, 2) as run:
        run.wait_for(lambda: any(line.startswith("all 2 instances") for line in run.said))
        second = run.group.instances[1]
        assert second.process is not None
        os.kill(second.process.pid, signal.SIGKILL)
        run.wait_for(lambda: second.starts == 2 and second.ready.is_set())
    assert run.error is None and run.report is not None
    assert (
        _starts(folder, "base-2")
        == ["connect mqtt --member-of plant --client-id base-2 --report-every 0"] * 2
    )  # the same client id: the broker sends it again what it had not acknowledged
    assert len(_starts(folder, "base-1")) == 1
    assert any(
        line.startswith("connector-2: ended (killed by SIGKILL) after ") for line in run.said
    )
    assert "connector-2: started again (restart 1)" in run.said
    resumed = "as base-2 in share group plant (session resumed)"
    assert f"connector-2: subscribed to 1 topic filters {resumed}" in run.said
    report = run.report
    assert report.restarts == 1 and second.ends == ["killed by SIGKILL"]
    assert report.total("events") == 100 + 200  # the killed run reported nothing
    assert (
        "; restarts: 1 (connector-2 killed by SIGKILL; what those runs forwarded"
        in report.summary()
    )


def test_an_instance_that_fails_before_it_subscribed_stops_the_group_with_its_error(
    folder: Path,
) -> None:
    with running(folder, 2, {"base-2": "refuse"}) as run:
        run.wait_for(lambda: not run.thread.is_alive())
    assert isinstance(run.error, ServiceError)
    assert str(run.error) == (
        "connector-2 ended (exit code 2) before it subscribed: "
        "the MQTT broker at localhost:8883 refused the login: not authorized"
    )
    first = run.group.instances[0]
    assert first.stop_code in CLEAN_STOPS  # stopped by the group
    assert not any("refused the login" in line for line in run.said)  # said once, as the error


def test_an_instance_that_keeps_ending_makes_the_group_give_up(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connector_group, "RESTART_BACKOFF_S", 0.01)
    monkeypatch.setattr(connector_group, "GIVE_UP_AFTER", 3)
    with running(folder, 2, {"base-1": "end soon"}) as run:
        run.wait_for(lambda: not run.thread.is_alive(), timeout_s=30)
    assert isinstance(run.error, ServiceError)
    assert str(run.error).startswith(
        "connector-1 ended 3 times in a row within 30 s of its start (last: exit code 3: "
    )
    assert len(_starts(folder, "base-1")) == 3
    restarts = [line for line in run.said if line.startswith("connector-1: ended (exit code 3)")]
    assert len(restarts) == 2  # each restart said, the third end is the error
    assert run.group.instances[1].stop_code == 0


def test_a_stop_before_all_subscribed_stops_those_started(folder: Path) -> None:
    with running(folder, 2) as run:
        run.stop.set()
        run.wait_for(lambda: not run.thread.is_alive())
    assert run.error is None and run.report is not None
    assert all(i.stop_code is not None for i in run.group.instances)
    assert run.report.failed == []


def test_the_names_of_a_group() -> None:
    assert member_client_id("statestream-connector", 1) == "statestream-connector-1"
    assert default_share_group("plant/a+b#") == "plant_a_b_"
    assert shared_subscription("g", "/hfp/v2/#") == "$share/g//hfp/v2/#"
    for bad in ("", "a/b", "a+", "#"):
        with pytest.raises(ConfigError, match="cannot name a share group"):
            shared_subscription(bad, "machine/states")
    assert exit_text(-signal.SIGTERM) == "killed by SIGTERM" and exit_text(0) == "exit code 0"


def test_one_connector_subscribes_without_share_and_a_member_with_it() -> None:
    settings = Settings()
    filters = ["machine/states", "/hfp/v2/journey/ongoing/vp/#"]
    assert MqttConnector(settings, topics=filters).subscriptions == filters
    member = MqttConnector(settings, topics=filters, share_group="plant")
    assert member.subscriptions == [f"$share/plant/{f}" for f in filters]
    assert member.topics == filters  # the routes still match the messages' own topics
