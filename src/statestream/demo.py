"""`statestream demo`: the whole pipeline on the local services, started and stopped as one.

Processes, each the statestream command a user would run by hand, with the same settings: the
dashboard, the MQTT connector (both use cases), the Spark pipeline (join, statistics, InfluxDB
sink and the vehicle queries of `run geo` in one application), the machine simulator and the
vehicle simulator (`simulate vehicles`; it and the vehicle queries only if `vehicles` is on, the
default).

The machine simulator replays the sample with event times that follow the clock (`retime`, the
default: each row is stamped with the time it is sent, so the "live" charts show now; without it
the sample's times are shifted to start now and, sent faster than they were recorded, run ahead
of the clock). Each part writes its output to `<data_dir>/logs/demo-<part>.log`. Stopping
(Ctrl-C, SIGTERM or SIGHUP) goes back to front: the simulators first, so that what they sent
still flows through, then the Spark pipeline, the connector and the dashboard, each with
SIGINT and time to finish cleanly. A demo killed with -9 cannot do that: each part then sees
its lifeline to the demo end (`stop_when_demo_ends`) and stops itself, as on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from statestream.config import Settings, settings_environment
from statestream.errors import ServiceError
from statestream.queries import pipeline_queries

STOP_TIMEOUT_S = 45.0
VEHICLE_DRIVING_S = 365 * 24 * 3600  # `simulate vehicles` ends after this: never, for a demo
HFP_FILTER = "/hfp/v2/journey/ongoing/vp/#"  # what the connector's vehicle processor reads
MACHINE_QUERIES = len(pipeline_queries(vehicles=False))  # what `run pipeline` starts
LIFELINE_ENV = "STATESTREAM_DEMO_LIFELINE"  # a part's end of the pipe to its demo


@dataclass(frozen=True)
class DemoOptions:
    rate: float | None = None  # rows/s of the simulator, all machines; None: `demo_rate`
    things: int = 6  # machines the simulator clones the sample into
    retime: bool = True  # event times follow the clock (simulate --follow-clock)
    vehicles: bool = True  # the vehicle use case too: `run geo` and `simulate vehicles`
    vehicle_count: int = 50  # buses and trams of `simulate vehicles`


@dataclass
class DemoPart:
    """One process of the demo."""

    name: str
    args: list[str]
    log: Path
    environment: dict[str, str] = field(default_factory=dict)  # on top of the demo's
    process: subprocess.Popen | None = field(default=None, repr=False)
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, environment: dict[str, str]) -> None:
        """Start it, tied to this process by a lifeline (`stop_when_demo_ends`)."""
        lifeline = _lifeline()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "statestream", *self.args],
            env={**environment, **self.environment, LIFELINE_ENV: str(lifeline)},
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the demo only, which stops all in order
            pass_fds=(lifeline,),
        )

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGINT (a clean stop), then SIGKILL to the whole process group if it does not end."""
        if self.process is not None and self.process.poll() is None:
            _signal_group(self.process, signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def kill(self) -> None:
        """kill -9 its whole process group (a Spark driver and its Python workers too)."""
        if self.process is not None and self.process.poll() is None:
            _signal_group(self.process, signal.SIGKILL)
            self.process.wait(30)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def last_lines(self, count: int = 5) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-count:])
        except OSError:
            return ""


@functools.cache
def _lifeline() -> int:
    """The read end of this process's lifeline, handed to each part it starts: a pipe whose
    write end only this process holds, open until it ends (however it ends)."""
    read_end, _write_end = os.pipe()  # neither is inherited by anything else it starts
    return read_end


def take_back_ctrl_c() -> None:
    """Make SIGINT Ctrl-C again (Python's `default_int_handler`) if this process inherited it
    ignored: a shell starts what it runs in the background that way (`statestream demo &` in a
    script, a CI job), and `kill -INT` should stop it as Ctrl-C does. Every `statestream`
    command calls it first (`statestream.cli.main`); a handler already set is left alone.
    """
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_when_demo_ends() -> None:
    """In a part that `DemoPart` started (`python -m statestream …` with `LIFELINE_ENV` set,
    for the demo or a chaos run): SIGINT, the part's clean stop, once the process that started
    it (the demo) has ended, however it ended.

    The part reads its lifeline, a pipe whose write end only the demo's process holds, so the
    read ends when that process does, even killed with -9: then the part sends itself SIGINT,
    once. (Linux's PR_SET_PDEATHSIG is no substitute: it fires once per thread of the demo that
    ends, and a part takes a second SIGINT for "stop at once".) SIGINT is also how the demo stops
    its parts, so it is made Ctrl-C again here (`take_back_ctrl_c`) even if the part inherited
    it ignored.
    """
    lifeline = os.environ.pop(LIFELINE_ENV, None)
    if lifeline is None or threading.current_thread() is not threading.main_thread():
        return
    take_back_ctrl_c()

    def wait_for_the_demo_to_end() -> None:
        with contextlib.suppress(OSError):
            while os.read(int(lifeline), 64):
                pass
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=wait_for_the_demo_to_end, name="demo-lifeline", daemon=True).start()


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def wait_for_queries(
    settings: Settings, part: DemoPart, count: int, timeout_s: float = 300.0
) -> None:
    """Wait until `count` queries of the Spark application `part` have reported a first trigger.

    By then each has fixed where it starts reading (the topics' ends at that moment). Returns
    early when `part` ended (its caller reports that); `ServiceError` after `timeout_s`.
    """
    from statestream.jobs.status import read_statuses, status_folder

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not part.running:
            return
        statuses = read_statuses(status_folder(settings))
        pid = part.process.pid if part.process is not None else None
        mine = [s for s in statuses if s.pid == pid and s.batch is not None]
        if len(mine) >= count:
            return
        time.sleep(0.5)
    raise ServiceError(f"the {part.name}'s queries did not start within {timeout_s:.0f} s")


def demo_parts(settings: Settings, options: DemoOptions) -> list[DemoPart]:
    """The demo's processes in start order (stopped in the reverse order).

    The pipeline keeps its checkpoints apart (`demo_checkpoints`) and reads from the topics' ends:
    the simulator's event times start at the demo's start, so a new demo must not continue the
    state of an earlier one, whose event times may be ahead of this one's (a demo without
    `retime` runs ahead of the clock) and would make the new records late.
    """
    rate = options.rate or demo_rate(settings, options.things)
    simulator = [
        "simulate", "--to", "mqtt", "--rate", f"{rate:g}", "--order", "time",
        "--retime", "--loop", "forever", "--things", str(options.things),
    ]  # fmt: skip
    logs = settings.paths.log_dir
    commands = {
        "dashboard": ["dashboard"],
        "connector": ["connect", "mqtt"],
        "pipeline": ["run", "pipeline", "--from", "latest"]
        + (["--vehicles"] if options.vehicles else []),
        "simulator": [*simulator, "--follow-clock"] if options.retime else simulator,
        "vehicle-simulator": [
            "simulate", "vehicles", "--to", "mqtt", "--vehicles", str(options.vehicle_count),
            "--duration", str(VEHICLE_DRIVING_S), "--topic-root", vehicle_topic_root(settings),
        ],
    }  # fmt: skip
    if not options.vehicles:
        del commands["vehicle-simulator"]
    checkpoints = {"STATESTREAM_SPARK__CHECKPOINT_ROOT": str(demo_checkpoints(settings))}
    return [
        DemoPart(name, args, logs / f"demo-{name}.log", checkpoints if name == "pipeline" else {})
        for name, args in commands.items()
    ]


def vehicle_topic_root(settings: Settings) -> str:
    """What goes before `/hfp` in the vehicle simulator's topics, so that the connector reads
    them: the prefix of the topic filter `ingest.processors` gives the vehicle processor ("" by
    default; a namespace of its own lets a test demo share the broker with other publishers)."""
    for topic_filter, processor in (settings.ingest.processors or {}).items():
        if processor == "vehicles" and topic_filter.endswith(HFP_FILTER):
            return topic_filter.removesuffix(HFP_FILTER)
    return ""


def demo_rate(settings: Settings, things: int) -> float:
    """The simulator's default rate: one row per machine and sampling interval.

    The statistics count each power record as `stats.sampling_interval_s` (1 s) of operation;
    with event times that follow the clock, a machine sending more rows a second would spend more
    seconds in a window than the window has (a duty cycle above 100 %).
    """
    return things / settings.stats.sampling_interval_s


def demo_checkpoints(settings: Settings) -> Path:
    """The checkpoint root of the demo's pipeline, emptied at each start."""
    return settings.checkpoint_root / "demo"


def dashboard_address(settings: Settings) -> str:
    host = settings.dashboard.host
    return f"http://{'[' + host + ']' if ':' in host else host}:{settings.dashboard.port}/"


class Demo:
    """Starts the parts, watches them, stops them in order."""

    def __init__(self, settings: Settings, options: DemoOptions) -> None:
        self.settings = settings
        self.parts = demo_parts(settings, options)
        self.queries = len(pipeline_queries(vehicles=options.vehicles))
        self.environment = {**os.environ, **settings_environment(settings)}

    def start(self, say: Callable[[str], None]) -> None:
        """Start every part; raises `ServiceError` if one ends during start-up.

        The simulators start once the Spark queries run: they read from the topics' ends. The
        vehicles start once the pipeline has taken in machine data: the first records make every
        query start its Python workers, and all of them at once on a small machine can take
        longer than Spark waits for a worker (10 s).
        """
        shutil.rmtree(demo_checkpoints(self.settings), ignore_errors=True)
        for part in self.parts:
            if part.name == "vehicle-simulator":
                self._wait_for_machine_data()
            say(f"starting {part.name}: statestream {' '.join(part.args)}  (log: {part.log})")
            part.start(self.environment)
            if part.name == "dashboard":
                self._wait_for_dashboard(part)
            if part.name == "pipeline":
                wait_for_queries(self.settings, part, self.queries)
        time.sleep(1.0)
        self.raise_if_one_ended()

    @property
    def pipeline_pid(self) -> int | None:
        """The process id of the Spark pipeline (its queries report under it)."""
        part = next(p for p in self.parts if p.name == "pipeline")
        return part.process.pid if part.process is not None else None

    def raise_if_one_ended(self) -> None:
        for part in self.parts:
            if not part.running:
                code = part.process.returncode if part.process else None
                raise ServiceError(
                    f"{part.name} ended (exit code {code}); the end of {part.log}:\n"
                    + part.last_lines()
                )

    def stop(self, say: Callable[[str], None]) -> None:
        for part in reversed(self.parts):
            if part.running:
                say(f"stopping {part.name} …")
            part.stop()

    def _wait_for_machine_data(self, timeout_s: float = 120.0) -> None:
        """Wait until the pipeline's queries have taken in records (or `timeout_s` passed)."""
        from statestream.jobs.status import read_statuses, status_folder

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            statuses = read_statuses(status_folder(self.settings))
            mine = [s for s in statuses if s.pid == self.pipeline_pid]
            busy = [s for s in mine if s.totals.get("input_rows", 0) > 0]
            if len(busy) >= MACHINE_QUERIES or self.pipeline_pid is None:
                return  # (a pipeline that ended is reported by raise_if_one_ended)
            time.sleep(0.5)

    def _wait_for_dashboard(self, part: DemoPart, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not part.running:
                return  # reported by raise_if_one_ended
            try:
                urllib.request.urlopen(dashboard_address(self.settings), timeout=2).close()
                return
            except urllib.error.HTTPError:
                return  # it answers (401 when a token is set)
            except OSError:
                time.sleep(0.3)
        raise ServiceError(f"the dashboard did not answer within {timeout_s:.0f} s ({part.log})")
