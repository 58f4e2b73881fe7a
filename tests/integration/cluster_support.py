"""What the local-cluster tests share: the cluster's environment, its topics, a job to kill.

The cluster (2 Spark workers, 3 Kafka brokers) runs from its own data folder on ports of its own,
so a developer's running services are never touched. A job (`statestream run join`, or
spark-submit of `run pipeline`) runs in a child process of its own session, so a test can kill
it, a worker or a broker with -9.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings, ensure_local_secrets, load_settings
from statestream.queries.stats.job import stats_spec
from statestream.services._process import command_line, read_pid
from statestream.services.topics import TopicSpec, replicated
from statestream.stats.reference import latest_results, power_frame, reference_statistics
from tests.integration.test_join_job import _read_json
from tests.support import TEST_JVM_ENVIRONMENT, granted, run_cli

REPO = Path(__file__).resolve().parents[2]
_BATCH = re.compile(r"^batch (\d+): ([\d,]+) in")
# two shuffle partitions as in the other job tests; a batch's line never wrapped
_JOB_ENV = {"STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2", "COLUMNS": "200"}
# the topics of a test's own (settings field: name suffix)
_TOPICS = {
    "machine_data": "in",
    "machine_out": "out",
    "late": "late",
    "dead_letter": "dlq",
    "stats": "stats",
    "alerts": "alerts",
    "machine_quantities": "quantities",
}
# as `topics create` makes them: results in write order
_ONE_PARTITION = {"stats", "alerts", "machine_quantities"}


def free_range(count: int) -> int:
    """The first of `count` consecutive TCP ports nobody listens on."""
    for _ in range(50):
        first = random.randrange(20_000, 30_000)
        with ExitStack() as stack:
            try:
                for port in range(first, first + count):
                    stack.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise AssertionError("no free port range")


def cluster_environment(data_dir: Path) -> dict[str, str]:
    """Settings (as environment) of 2 workers and 3 brokers on free ports; MQTT and InfluxDB
    elsewhere, so `services up` starts only the cluster."""
    kafka, spark = free_range(6), free_range(6)
    return {
        "STATESTREAM_PATHS__DATA_DIR": str(data_dir),
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS": f"localhost:{kafka}",
        "STATESTREAM_KAFKA__CONTROLLER_PORT": str(kafka + 1),
        "STATESTREAM_KAFKA__BROKER_HEAP": "512m",
        "STATESTREAM_MQTT__HOST": "mqtt.invalid",
        "STATESTREAM_INFLUX__URL": "http://influx.invalid:8086",
        "STATESTREAM_SERVICES__KAFKA_BROKERS": "3",
        "STATESTREAM_SERVICES__SPARK_WORKERS": "2",
        "STATESTREAM_SERVICES__SPARK_WORKER_MEMORY": "1g",
        "STATESTREAM_SERVICES__SPARK_MASTER_PORT": str(spark),
        "STATESTREAM_SERVICES__SPARK_MASTER_UI_PORT": str(spark + 1),
        "STATESTREAM_SERVICES__SPARK_WORKER_PORT": str(spark + 2),
        "STATESTREAM_SERVICES__SPARK_WORKER_UI_PORT": str(spark + 4),
    }


def clean_environment() -> dict[str, str]:
    """This process's environment without statestream's settings (but the suite's JVM options)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STATESTREAM_")}
    return {**clean, **TEST_JVM_ENVIRONMENT}


def cluster_settings(env: dict[str, str]) -> Settings:
    """The settings a command run with `env` sees (bootstrap servers: all three brokers)."""
    with mock.patch.dict(os.environ, {**clean_environment(), **env}, clear=True):
        return ensure_local_secrets(load_settings())


def our_processes(data_dir: Path) -> list[str]:
    """The command lines of the processes that run from `data_dir`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            args = command_line(int(proc.name))
            if args and str(data_dir) in " ".join(args):
                found.append(" ".join(args)[:160])
    return found


def services_up(env: dict[str, str]) -> None:
    """`statestream services up`: starts what of the cluster is not running (a killed node)."""
    up = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=240)
    assert up.exit_code == 0, up.stderr + up.stdout


def kill_service(settings: Settings, name: str) -> None:
    """kill -9 the process group of service process `name` (a worker and its executors)."""
    pid = read_pid(settings.paths.data_dir / "run" / f"{name}.pid")
    assert pid is not None, f"{name} has no pid file"
    os.killpg(pid, signal.SIGKILL)


def replicated_topics(settings: Settings, name: str, partitions: int) -> Settings:
    """Settings whose join and statistics topics are new ones named after `name`, each with 3
    replicas and min.insync.replicas 2 (as `topics create` makes them on three brokers); those
    of the join have `partitions`."""
    topics = settings.topics.model_copy(
        update={field: f"{name}.{suffix}" for field, suffix in _TOPICS.items()}
    )
    sizes = {field: 1 if field in _ONE_PARTITION else partitions for field in _TOPICS}
    specs = [replicated(TopicSpec(getattr(topics, f), n), settings) for f, n in sizes.items()]
    new = [NewTopic(s.name, s.partitions, s.replication_factor, config=s.config) for s in specs]
    admin = AdminClient(settings.kafka.client_config())  # alive until the futures are done
    for future in admin.create_topics(new).values():
        future.result()
    return granted(settings.model_copy(update={"topics": topics}))


def leader_of(settings: Settings, topic: str, partition: int = 0) -> int:
    """The broker (node id) leading `partition` of `topic`."""
    metadata = AdminClient(settings.kafka.client_config()).list_topics(topic, timeout=10)
    return metadata.topics[topic].partitions[partition].leader


def produce_acks_all(settings: Settings, lines: list[bytes]) -> None:
    """`lines` onto machine.data, keyed thing.quantity, with acks=all as the connector does;
    fails unless every record was acknowledged."""
    import json

    failed: list[str] = []
    producer = Producer(
        {
            **settings.kafka.client_config(),
            "enable.idempotence": True,
            "acks": "all",
            "log_level": 0,
        }
    )

    def on_delivery(error, _message) -> None:
        if error is not None:
            failed.append(error.str())

    for raw in lines:
        record = json.loads(raw)
        key = f"{record['thing']}.{record['quantity']}"
        producer.produce(settings.topics.machine_data, raw, key, on_delivery=on_delivery)
    assert producer.flush(120) == 0, "records still unacknowledged after 120 s"
    assert failed == [], failed[:3]


def topic_environment(settings: Settings) -> dict[str, str]:
    """The environment that gives a child process the same join and statistics topics."""
    return {f"STATESTREAM_TOPICS__{n.upper()}": getattr(settings.topics, n) for n in _TOPICS}


class JobProcess:
    """A statestream command (`args`, run in `cwd`) in a session of its own; its stdout read by
    lines, its batch lines counted.

    Spark's logs (stderr) go to `log`, so a full pipe never blocks it. `environment` is the whole
    environment of the process.
    """

    def __init__(
        self, args: list[str], environment: dict[str, str], log: Path, cwd: Path = REPO
    ) -> None:
        self.log = log
        self.batches: list[tuple[int, int]] = []  # (batch id, records in) of the printed lines
        self.output: list[str] = []  # every line it printed
        with open(self.log, "a") as err:
            self.process = subprocess.Popen(
                args,
                env={**environment, **_JOB_ENV},
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
                cwd=cwd,
            )

    def wait_for_batches(self, count: int, timeout_s: float = 240) -> None:
        """Read its output until `count` more batch lines came; fails if it ends before."""
        target = len(self.batches) + count
        self._read_until(lambda: len(self.batches) >= target, timeout_s)
        assert len(self.batches) >= target, f"{self.batches}; {self.failure()}"

    def wait_for_records(self, total: int, timeout_s: float = 240) -> None:
        """Read its output until its batches took `total` records in; fails if it ends before."""
        self._read_until(lambda: self.records_in >= total, timeout_s)
        assert self.records_in >= total, (
            f"{self.records_in} of {total} records in {self.batches}; {self.failure()}"
        )

    @property
    def records_in(self) -> int:
        return sum(records for _, records in self.batches)

    def finish(self, timeout_s: float = 300) -> int:
        """Read the rest of its output until it exits; its exit code."""
        self._read_until(lambda: False, timeout_s)
        return self.process.wait(timeout=30)

    def kill(self) -> None:
        """kill -9 its whole session: the driver and its Python."""
        self._kill_group()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def failure(self) -> str:
        printed = "\n".join(self.output[-20:])
        logged = self.log.read_text()[-2000:]
        return f"exit code {self.process.poll()}; it printed:\n{printed}\nand logged:\n{logged}"

    def _read_until(self, done, timeout_s: float) -> None:
        """Read lines until `done()` or the end of its output; a job that hangs is killed."""
        assert self.process.stdout is not None
        watchdog = threading.Timer(timeout_s, self._kill_group)
        watchdog.start()
        try:
            while not done():
                line = self.process.stdout.readline()
                if not line:
                    return
                self.output.append(line.rstrip())
                match = _BATCH.match(line)
                if match:
                    self.batches.append((int(match[1]), int(match[2].replace(",", ""))))
        finally:
            watchdog.cancel()


class JoinProcess(JobProcess):
    """`statestream run join` on the cluster, with the checkout's Python; logs beside the
    checkpoint (`job.err`)."""

    def __init__(self, env: dict[str, str], checkpoint: Path, *options: str) -> None:
        args = [sys.executable, "-m", "statestream", "run", "join", "--checkpoint", str(checkpoint)]
        environment = {**clean_environment(), **env}
        super().__init__([*args, *options], environment, checkpoint.parent / "job.err")


def statistics_against_reference(settings: Settings) -> dict[str, object]:
    """What the statistics query wrote (levels, duty cycles, alerts, late records) against the
    pandas reference computed from the join's pairs on the machine_out topic."""
    pairs = _read_json(settings, settings.topics.machine_out)
    expected = reference_statistics(power_frame(pairs), stats_spec(settings))
    levels, duty = latest_results(_read_json(settings, settings.topics.stats))
    alerts = _read_json(settings, settings.topics.alerts)
    late = [r for r in _read_json(settings, settings.topics.late) if r.get("stage") == "stats"]
    return {
        "level_windows": len(levels),
        "duty_windows": len(duty),
        "alerts": len(alerts),
        "levels_equal": levels == expected.levels,
        "duty_equal": duty == pytest.approx(expected.duty),
        "alerts_equal": {(a["thing"], a["component"], a["window_start"]) for a in alerts}
        == {key for key, value in expected.duty.items() if value > settings.stats.duty_limit},
        "stats_late": len(late),
        "expected_stats_late": int(expected.late.sum()),
    }
