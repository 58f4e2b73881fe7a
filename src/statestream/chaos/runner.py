"""`run_chaos`: the whole pipeline under steady load while its parts are killed with -9 and
started again, then the checks (`checks.check_run`).

1. The local services run (started if need be); the run gets its own topics, database and
   checkpoints (`workspace`).
2. The connector (`connect mqtt`) and the Spark pipeline (`run pipeline`: join, stats, InfluxDB
   sink) start as child processes; the simulator publishes from a thread once both are up. With
   `services.spark_workers` > 0 the pipeline's driver runs on the local standalone master (the
   settings' `spark.master`), its executors on the workers.
3. For `minutes`, the kills of the seeded schedule (`schedule`) happen, each part started again
   after its down time; a child that ends on its own is started again at once.
4. Every part running again, the simulator stops (once the broker acknowledged all it sent), the
   connector gets time to forward what Mosquitto still holds, the streaming pipeline stops and
   `run pipeline --available-now` finishes what is in the topics; then the checks.
5. Mosquitto is left as the run found it: when the run changed its configuration (`--mqtt-saves
   every-change`), it is started again with the settings' own (a stopped one stays stopped).

Mosquitto saves on the settings' schedule (`mqtt.save_after_changes`, by default once a minute):
what it acknowledged since its last save dies with a kill -9 (`loss_window`), and the run counts
those rows per kill rather than failing on them. `mqtt_saves="every-change"` makes it save after
every change, which narrows the window to the messages of one pass of its loop and caps the rate.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Literal

from statestream.chaos.checks import (
    ChaosChecks,
    Published,
    check_run,
    published_records,
    record_key,
)
from statestream.chaos.load import SimulatorLoad
from statestream.chaos.parts import ChildPart, PartCounts, ServicePart, child_part
from statestream.chaos.recovery import Outage
from statestream.chaos.schedule import SPARK_WORKER, Kill, kill_schedule
from statestream.chaos.soak import (
    Sample,
    folder_bytes,
    group_rss_mb,
    not_flat,
    queries_state_and_lag,
)
from statestream.chaos.workspace import Workspace, new_workspace, refuse_external, remove_workspace
from statestream.config import Settings, ensure_local_secrets, settings_environment
from statestream.demo import wait_for_queries
from statestream.errors import ServiceError
from statestream.exactly_once.read import TopicFollower
from statestream.queries import pipeline_queries
from statestream.services.stack import start_services, stop_services

PIPELINE_QUERIES = len(pipeline_queries(vehicles=False))  # what `run pipeline` starts
FORWARD_IDLE_S = 180.0  # the longest wait for the connector's next row on Kafka, at the end
FINISH_TIMEOUT_S = 900.0  # for `run pipeline --available-now`
RATE_HELD = 0.95  # a run whose simulator held less of the rate asked fails
SAMPLE_EVERY_S = 60.0  # memory, state, checkpoints and lag (`soak`)
Say = Callable[[str], None]
MqttSaves = Literal["schedule", "every-change"]


@dataclass(frozen=True)
class ChaosOptions:
    minutes: float = 20.0
    seed: int = 0
    rate: float = 20.0  # rows/s of the simulator, all machines
    things: int = 6
    mqtt_saves: MqttSaves = "schedule"  # Mosquitto's save schedule, or after every change
    kills: int | None = None  # at most this many of the schedule's kills (0: a soak)


@dataclass
class ChaosReport:
    """What a run did (kills per component) and what it found."""

    options: ChaosOptions
    workspace: str = ""
    counts: dict[str, PartCounts] = field(default_factory=dict)
    checks: ChaosChecks | None = None
    rate_held: float = 0.0  # rows/s the simulator published while the kills went on
    samples: list[Sample] = field(default_factory=list)  # one a minute
    problems: list[str] = field(default_factory=list)  # what kept the run from finishing

    @property
    def kills(self) -> int:
        return sum(c.kills for c in self.counts.values())

    @property
    def passed(self) -> bool:
        return self.checks is not None and self.checks.passed and not self.problems

    def to_json(self) -> dict[str, object]:
        names = [f.name for f in fields(ChaosChecks)]  # null when the run ended before
        checks = {name: getattr(self.checks, name, None) for name in names}
        windows = self.checks.mosquitto_windows if self.checks else ()
        checks["mosquitto_windows"] = [window.to_json() for window in windows]
        queries = self.checks.queries if self.checks else {}
        checks["queries"] = {name: asdict(check) for name, check in queries.items()}
        return {
            "passed": self.passed,
            "seed": self.options.seed,
            "minutes": self.options.minutes,
            "rate_asked": self.options.rate,
            "rate_held": round(self.rate_held, 1),
            "mqtt_saves": self.options.mqtt_saves,
            "samples": [sample.to_json() for sample in self.samples],
            "kills": self.kills,
            "kills_by_component": {name: c.kills for name, c in self.counts.items()},
            "components": {name: c.to_json() for name, c in self.counts.items()},
            **checks,
            "problems": self.problems,
            "workspace": self.workspace,
        }


class ChaosRun:
    """One run: its parts, its schedule, its load."""

    def __init__(self, settings: Settings, workspace: Workspace, options: ChaosOptions) -> None:
        self.settings = workspace.settings
        self.workspace = workspace
        self.options = options
        environment = {**os.environ, **settings_environment(self.settings)}
        logs = workspace.logs
        self.connector = child_part(
            "connector", ["connect", "mqtt"], logs / "connector.log", environment
        )
        pipeline_args = ["run", "pipeline", "--from", "earliest"]
        self.pipeline = child_part("pipeline", pipeline_args, logs / "pipeline.log", environment)
        finish_args = ["run", "pipeline", "--available-now"]
        self.finisher = child_part("finish", finish_args, logs / "finish.log", environment)
        services = settings.services
        workers = (SPARK_WORKER,) if services.spark_workers > 0 else ()
        self.parts: dict[str, ChildPart | ServicePart] = {
            "connector": self.connector,
            "pipeline": self.pipeline,
            **{
                name: ServicePart(settings, name)
                for name in ("mosquitto", "influxdb", "kafka", *workers)
            },
        }
        self.schedule = kill_schedule(
            options.seed, options.minutes * 60, services.kafka_brokers, services.spark_workers
        )[: options.kills]
        self.samples: list[Sample] = []
        self.outages: list[Outage] = []
        self.load = SimulatorLoad(self.settings, options.rate, options.things, options.seed)
        self.environment = environment

    def start(self, say: Say) -> None:
        say(f"starting the connector (log: {self.connector.part.log})")
        self.connector.start()
        _wait_for_line(self.connector, "subscribed to", 60.0)
        # the connector's new session saved at once, not at Mosquitto's next save: a broker
        # killed before then would come back without the subscription and drop what follows
        mosquitto = self.parts["mosquitto"]
        assert isinstance(mosquitto, ServicePart)
        mosquitto.save_store()
        say(f"starting the Spark pipeline (log: {self.pipeline.part.log})")
        self.pipeline.start()
        wait_for_queries(self.settings, self.pipeline.part, PIPELINE_QUERIES)
        if not self.pipeline.running:
            raise ServiceError(f"the pipeline ended at its start; see {self.pipeline.part.log}")
        self.load.start()

    def chaos(self, progress: Say) -> None:
        """The kills of the schedule for `minutes`; parts started again after their down time.

        A restart that takes long (a Kafka broker's) delays the kills due meanwhile; every kill
        of the schedule still happens, after the end if need be."""
        started = time.monotonic()
        due: list[Kill] = list(self.schedule)
        restarts: list[tuple[float, str]] = []
        end = started + self.options.minutes * 60
        next_sample = started + SAMPLE_EVERY_S
        while (time.monotonic() < end or due) and self.load.error is None:
            now = time.monotonic() - started
            if time.monotonic() >= next_sample:
                self.samples.append(self.sample(now))
                next_sample += SAMPLE_EVERY_S
            while due and due[0].at_s <= now:
                kill = due.pop(0)
                if self.parts[kill.component].down:  # two of its kills fell due together
                    restarts = [r for r in restarts if r[1] != kill.component]
                    self._restart(kill.component)  # each kill -9 meets a running part
                self.outages.append(Outage(kill.component, time.time()))
                self.parts[kill.component].kill(kill.target)
                restarts.append((now + kill.down_s, kill.component))
            for at, name in [r for r in restarts if r[0] <= now]:
                restarts.remove((at, name))
                self._restart(name)
            for part in self.parts.values():
                part.restart_if_ended()
            progress(self._progress(now))
            time.sleep(0.5)
        for _, name in restarts:
            self._restart(name)

    def _restart(self, name: str) -> None:
        """Start the killed part `name` again, and note when it was up."""
        self.parts[name].restart()
        for outage in reversed(self.outages):
            if outage.component == name and math.isnan(outage.restarted_at):
                outage.restarted_at = time.time()
                break

    def finish(self, say: Say) -> None:
        """Stop the load, let everything through, stop the parts."""
        for part in self.parts.values():
            part.restart_if_ended()
        say("stopping the simulator (waiting for the broker's acknowledgements)")
        self.load.stop()
        say("waiting for the connector to forward every published row to Kafka")
        self._wait_for_records()
        say("stopping the streaming pipeline; run pipeline --available-now finishes the topics")
        self.pipeline.stop()
        self.finisher.start()
        process = self.finisher.part.process
        assert process is not None
        try:
            code = process.wait(FINISH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        self.finisher.stop()
        self.connector.stop()
        if code != 0:
            why = "did not finish in time" if code is None else f"failed (exit code {code})"
            raise ServiceError(f"run pipeline --available-now {why}; see {self.finisher.part.log}")

    def stop(self) -> None:
        for part in (self.finisher, self.connector, self.pipeline):
            part.stop()

    def counts(self) -> dict[str, PartCounts]:
        return {name: part.counts for name, part in self.parts.items()}

    def sample(self, at_s: float) -> Sample:
        """Memory of every part, the queries' state and lag, the checkpoints' size, now."""
        rss = {"connector": group_rss_mb(_pid(self.connector))}
        rss["pipeline"] = group_rss_mb(_pid(self.pipeline))
        for part in self.parts.values():
            if isinstance(part, ServicePart):
                for process, service in part.processes().items():
                    rss[process] = group_rss_mb(service.running_pid())
        state, lag = queries_state_and_lag(
            self.settings.paths.data_dir / "status", _pid(self.pipeline)
        )
        checkpoints = folder_bytes(self.workspace.folder / "checkpoints")
        return Sample(round(at_s, 1), rss, state, checkpoints, lag)

    def published(self) -> Published:
        """The rows, their acknowledgements and Mosquitto's kills, for the checks."""
        mosquitto = self.parts["mosquitto"]
        assert isinstance(mosquitto, ServicePart)
        load = self.load
        return Published(load.rows, load.acknowledged_at, load.started_at, mosquitto.broker_kills)

    def _wait_for_records(self) -> None:
        """Until every record of the published rows is on machine.data, reading the topic as it
        grows, each record once; or until no record came for `FORWARD_IDLE_S` (the checks then
        count what is missing)."""
        missing = published_records(self.load.rows, self.settings.mqtt.topic)
        follower = TopicFollower(self.settings, self.settings.topics.machine_data)
        moved = time.monotonic()
        try:
            while missing and time.monotonic() - moved < FORWARD_IDLE_S:
                self.connector.restart_if_ended()
                new = follower.new_records(wait_s=5.0)
                missing.difference_update(record_key(_json(value)) for _, _, value in new)
                if new:
                    moved = time.monotonic()
                else:
                    time.sleep(0.5)
        finally:
            follower.close()

    def _progress(self, now: float) -> str:
        kills = sum(part.counts.kills for part in self.parts.values())
        down = [name for name, part in self.parts.items() if part.down]
        return (
            f"{now:5.0f} s of {self.options.minutes * 60:.0f}: {len(self.load.rows):,} rows "
            f"published, {kills} of {len(self.schedule)} kills"
            + (f", down: {', '.join(down)}" if down else "")
        )


def run_chaos(settings: Settings, options: ChaosOptions, say: Say, progress: Say) -> ChaosReport:
    """One chaos run on the local services; the report says what was killed and what was found."""
    refuse_external(settings)
    original = ensure_local_secrets(settings)
    settings = original
    if options.mqtt_saves == "every-change":
        settings = _mosquitto_saving_every_change(original, say)
    try:
        return _run(settings, options, say, progress)
    finally:
        if settings is not original:
            _put_mosquitto_back(original, say)


def _run(settings: Settings, options: ChaosOptions, say: Say, progress: Say) -> ChaosReport:
    start_services(settings)
    workspace = new_workspace(settings, options.seed)
    report = ChaosReport(options, workspace.describe())
    say(f"chaos run {workspace.run_id}: {workspace.describe()}")
    run = ChaosRun(settings, workspace, options)
    try:
        run.start(say)
        run.chaos(progress)
        run.finish(say)
        report.rate_held = run.load.rate_held
        report.samples = run.samples
        if options.kills == 0:  # a soak: memory, state, checkpoints and lag must settle
            report.problems += not_flat(run.samples, options.rate)
        if run.load.error is not None:
            report.problems.append(f"the simulator stopped: {run.load.error}")
        if report.rate_held < RATE_HELD * options.rate:
            report.problems.append(
                f"the simulator held {report.rate_held:,.0f} rows/s of the {options.rate:,.0f} "
                f"asked: the pipeline did not take the load (see the logs in the workspace)"
            )
        report.checks = check_run(workspace.settings, run.published(), run.outages, say)
    except (ServiceError, TimeoutError) as exc:
        report.problems.append(str(exc))
    finally:
        run.stop()
        report.counts = run.counts()
    if report.passed:
        remove_workspace(workspace)
        report.workspace = "removed"
    return report


def _mosquitto_saving_every_change(settings: Settings, say: Say) -> Settings:
    """`settings` with Mosquitto saving its store after every change; a running Mosquitto that
    saves less often is restarted with them (and put back at the end)."""
    if settings.mqtt.save_after_changes == 1:
        return settings
    mqtt = settings.mqtt.model_copy(update={"save_after_changes": 1})
    if any(s.state == "stopped" for s in stop_services(settings, names={"mosquitto"})):
        say("Mosquitto restarted to save after every change for this run (mqtt.save_after_changes)")
    return settings.model_copy(update={"mqtt": mqtt})


def _put_mosquitto_back(settings: Settings, say: Say) -> None:
    """Start Mosquitto again with the settings' own save schedule, as the run found it."""
    if any(s.state == "stopped" for s in stop_services(settings, names={"mosquitto"})):
        start_services(settings)
        say("Mosquitto started again with its own settings (mqtt.save_after_changes)")


def _pid(part: ChildPart) -> int | None:
    process = part.part.process
    return process.pid if process is not None and process.poll() is None else None


def _wait_for_line(part: ChildPart, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in part.part.log.read_text(errors="replace"):
            return
        if not part.running:
            break
        time.sleep(0.3)
    raise ServiceError(f"the {part.part.name} did not start: see {part.part.log}")


def _json(value: bytes) -> dict:
    import json

    return json.loads(value)
