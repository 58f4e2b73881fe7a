"""`run_chaos`: the whole pipeline under steady load while its parts are killed with -9 and
started again, then the checks (`checks.check_run`).

1. The local services run (started if need be); the run gets its own topics, database and
   checkpoints (`workspace`).
2. The connector (`connect mqtt`) and the Spark pipeline (`run pipeline`: join, stats, InfluxDB
   sink; with vehicles `run pipeline --vehicles`: geo cells and bunching too) start as child
   processes; the simulator publishes from a thread once both are up (with vehicles, the
   vehicle simulator from a second one). With `services.spark_workers` > 0 the pipeline's
   driver runs on the local standalone master (the settings' `spark.master`), its executors on
   the workers.
3. For `minutes`, the kills of the seeded schedule (`schedule`) happen, each part started again
   after its down time; a child that ends on its own is started again at once.
4. Every part running again, the simulators stop (once the broker acknowledged all they sent),
   the connector gets time to forward what Mosquitto still holds, the streaming pipeline stops
   and `run pipeline --available-now` finishes what is in the topics (with vehicles, after a
   closing position that makes every geo window final, `load.close_the_windows`); then the
   checks.
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

import numpy as np
import orjson

from statestream.chaos.arrivals import Awaited, wait_for_arrivals
from statestream.chaos.checkpoints import checkpoint_sizes, retained_batches
from statestream.chaos.checks import Published, check_run
from statestream.chaos.keys import record_hash, row_keys
from statestream.chaos.load import PublishingLoad, SimulatorLoad, VehicleLoad, close_the_windows
from statestream.chaos.loss_window import in_a_window
from statestream.chaos.parts import ChildPart, PartCounts, ServicePart, child_part
from statestream.chaos.recovery import Outage, SinkBatches
from statestream.chaos.report import ChaosOptions, ChaosReport
from statestream.chaos.schedule import SPARK_WORKER, Kill, kill_schedule
from statestream.chaos.soak import (
    Sample,
    ended_on_their_own,
    group_open_files,
    group_rss_mb,
    not_flat,
    queries_state_and_lag,
)
from statestream.chaos.vehicle_checks import (
    PositionKey,
    VehiclesPublished,
    message_positions,
    position_keys,
)
from statestream.chaos.workspace import (
    Workspace,
    new_workspace,
    refuse_external,
    remove_workspace,
    vehicle_root,
)
from statestream.config import Settings, ensure_local_secrets, settings_environment
from statestream.demo import wait_for_queries
from statestream.errors import ServiceError
from statestream.queries import pipeline_queries
from statestream.services.stack import start_services, stop_services

FINISH_TIMEOUT_S = 900.0  # for `run pipeline --available-now`
RATE_HELD = 0.95  # a run whose simulator held less of the rate asked fails
SAMPLE_EVERY_S = 60.0  # memory, state, checkpoints and lag (`soak`)
Say = Callable[[str], None]


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
        vehicles = ["--vehicles"] if options.vehicles else []
        pipeline_args = ["run", "pipeline", "--from", "earliest", *vehicles]
        self.pipeline = child_part("pipeline", pipeline_args, logs / "pipeline.log", environment)
        finish_args = ["run", "pipeline", "--available-now", *vehicles]
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
        self.sink_batches = SinkBatches(settings.paths.data_dir / "status")
        self._row_keys: tuple[np.ndarray, np.ndarray] | None = None  # made once the load stops
        self._positions: list[PositionKey | None] | None = None  # the vehicles', likewise
        self.load = SimulatorLoad(self.settings, options.rate, options.things, options.seed)
        self.vehicle_load = (
            VehicleLoad(
                self.settings, options.vehicles, options.seed, vehicle_root(workspace.run_id)
            )
            if options.vehicles
            else None
        )
        self.environment = environment

    @property
    def loads(self) -> list[PublishingLoad]:
        """The simulators: the machines', and the vehicles' when the run has them."""
        return [self.load, *([self.vehicle_load] if self.vehicle_load is not None else [])]

    @property
    def load_error(self) -> Exception | None:
        return next((load.error for load in self.loads if load.error is not None), None)

    def start(self, say: Say) -> None:
        say(f"starting the connector (log: {self.connector.part.log})")
        self.connector.start()
        _wait_for_line(self.connector, "subscribed to", 60.0)
        # the connector's new session saved at once, not at Mosquitto's next save: a broker
        # killed before then would come back without the subscription and drop what follows
        self._mosquitto.save_store()
        say(f"starting the Spark pipeline (log: {self.pipeline.part.log})")
        self.pipeline.start()
        queries = len(pipeline_queries(vehicles=self.vehicle_load is not None))
        wait_for_queries(self.settings, self.pipeline.part, queries)
        if not self.pipeline.running:
            raise ServiceError(f"the pipeline ended at its start; see {self.pipeline.part.log}")
        for load in self.loads:
            load.start()

    def chaos(self, progress: Say) -> None:
        """The kills of the schedule for `minutes`; parts started again after their down time.

        A restart that takes long (a Kafka broker's) delays the kills due meanwhile; every kill
        of the schedule still happens, after the end if need be."""
        started = time.monotonic()
        due: list[Kill] = list(self.schedule)
        restarts: list[tuple[float, str]] = []
        end = started + self.options.minutes * 60
        next_sample = started + SAMPLE_EVERY_S
        while (time.monotonic() < end or due) and self.load_error is None:
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
            self.sink_batches.look(_pid(self.pipeline))
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
        """Stop the loads, let everything through, stop the parts."""
        for part in self.parts.values():
            part.restart_if_ended()
        say("stopping the simulators (waiting for the broker's acknowledgements)")
        for load in self.loads:
            load.request_stop()
        for load in self.loads:
            load.join()
        say("waiting for the connector to forward every published message to Kafka")
        self._wait_for_records()
        say("stopping the streaming pipeline; run pipeline --available-now finishes the topics")
        self.pipeline.stop()
        if self.vehicle_load is not None:
            close_the_windows(self.settings)  # every geo window final at the end (`load`)
        _run_to_end(self.finisher, "run pipeline --available-now")
        self.connector.stop()

    def stop(self) -> None:
        for part in (self.finisher, self.connector, self.pipeline):
            part.stop()

    def counts(self) -> dict[str, PartCounts]:
        return {name: part.counts for name, part in self.parts.items()}

    def sample(self, at_s: float) -> Sample:
        """Memory of every part, the queries' state and lag, the checkpoints' size, now."""
        pids = {"connector": _pid(self.connector), "pipeline": _pid(self.pipeline)}
        for part in self.parts.values():
            if isinstance(part, ServicePart):
                for process, service in part.processes().items():
                    pids[process] = service.running_pid()
        rss = {process: group_rss_mb(pid) for process, pid in pids.items()}
        files = {process: group_open_files(pid) for process, pid in pids.items()}
        state, rows, lag = queries_state_and_lag(
            self.settings.paths.data_dir / "status", _pid(self.pipeline)
        )
        retained = retained_batches(self.settings.spark.extra_conf)
        sizes = checkpoint_sizes(self.workspace.folder / "checkpoints", retained)
        total = sum(size.bytes for size in sizes.values())
        return Sample(round(at_s, 1), rss, state, total, lag, files, sizes, rows)

    @property
    def _mosquitto(self) -> ServicePart:
        mosquitto = self.parts["mosquitto"]
        assert isinstance(mosquitto, ServicePart)
        return mosquitto

    def published(self) -> Published:
        """The rows, their acknowledgements and Mosquitto's kills, for the checks; with
        vehicles, their messages and acknowledgements too."""
        mosquitto, load, vehicles = self._mosquitto, self.load, self.vehicle_load
        return Published(
            load.rows,
            load.acknowledged_at,
            load.started_at,
            mosquitto.broker_kills,
            None
            if vehicles is None
            else VehiclesPublished(vehicles.messages, vehicles.acknowledged_at, self._positions),
            self._row_keys,
        )

    def _wait_for_records(self) -> None:
        """Until every record of the published rows is on machine.data, and every published
        position on the positions topic (`arrivals`); those of rows and positions that Mosquitto
        acknowledged inside a kill's loss window are awaited briefly (they may be gone)."""
        topics, kills = self.settings.topics, self._mosquitto.broker_kills
        self._row_keys = keys, row_of = row_keys(self.load.rows, self.settings.mqtt.topic)
        at_risk = in_a_window(kills, self.load.acknowledged_at)[row_of]
        awaited = [Awaited(topics.machine_data, keys, _record_key, at_risk)]
        if self.vehicle_load is not None:
            self._positions = positions = message_positions(self.vehicle_load.messages)
            risky = in_a_window(kills, self.vehicle_load.acknowledged_at)
            made = [i for i, position in enumerate(positions) if position]
            expected = np.array([hash(positions[i]) for i in made], np.int64)
            key = position_keys(self.settings.ingest.envelope)
            awaited.append(
                Awaited(topics.vehicle_positions, expected, lambda v: hash(key(v)), risky[made])
            )
        wait_for_arrivals(self.settings, awaited, self.connector.restart_if_ended)

    def _progress(self, now: float) -> str:
        kills = sum(part.counts.kills for part in self.parts.values())
        down = [name for name, part in self.parts.items() if part.down]
        return (
            f"{now:5.0f} s of {self.options.minutes * 60:.0f}: {len(self.load.rows):,} rows "
            + (f"and {len(v.messages):,} positions " if (v := self.vehicle_load) else "")
            + f"published, {kills} of {len(self.schedule)} kills"
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
    workspace = new_workspace(settings, options.seed, vehicles=options.vehicles > 0)
    report = ChaosReport(options, workspace.describe())
    say(f"chaos run {workspace.run_id}: {workspace.describe()}")
    run = ChaosRun(settings, workspace, options)
    try:
        run.start(say)
        run.chaos(progress)
        run.finish(say)
        report.rate_held = run.load.rate_held
        if run.vehicle_load is not None:
            report.vehicle_rate_held = run.vehicle_load.rate_held
        report.samples = run.samples
        if options.kills == 0:  # a soak: memory, files, state, checkpoints and lag settle
            report.problems += not_flat(run.samples, options.rate)
            report.problems += ended_on_their_own(
                {name: counts.exits for name, counts in run.counts().items()}
            )
        report.problems += _load_problems(run)
        report.checks = check_run(
            workspace.settings, run.published(), run.outages, say, run.sink_batches.ended_ms
        )
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


def _record_key(value: bytes) -> int:
    return record_hash(orjson.loads(value))


def _load_problems(run: ChaosRun) -> list[str]:
    """A simulator that stopped, or held less than `RATE_HELD` of its rate."""
    problems = []
    named: list[tuple[str, PublishingLoad, str]] = [("simulator", run.load, "rows")]
    if run.vehicle_load is not None:
        named.append(("vehicle simulator", run.vehicle_load, "positions"))
    for name, load, unit in named:
        if load.error is not None:
            problems.append(f"the {name} stopped: {load.error}")
        if load.rate_held < RATE_HELD * load.rate:
            problems.append(
                f"the {name} held {load.rate_held:,.0f} {unit}/s of the {load.rate:,.0f} asked: "
                "the pipeline did not take the load (see the logs in the workspace)"
            )
    return problems


def _run_to_end(part: ChildPart, command: str) -> None:
    """Run `part` (a `--available-now` command) to its end; `ServiceError` unless it ends well
    within `FINISH_TIMEOUT_S`."""
    part.start()
    process = part.part.process
    assert process is not None
    try:
        code = process.wait(FINISH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        code = None
    part.stop()
    if code != 0:
        why = "did not finish in time" if code is None else f"failed (exit code {code})"
        raise ServiceError(f"{command} {why}; see {part.part.log}")
