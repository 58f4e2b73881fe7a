"""A Spark standalone cluster of 2 workers and 3 Kafka brokers, started as `services up` does:
the same answers as in local mode, also when spark-submit runs the pipeline from a packed
environment, and exactly once when a worker, a broker or the driver dies.

Own data folder and own ports, so a developer's running services are never touched; MQTT and
InfluxDB point at another machine, so `up` leaves them out. One cluster for the whole module;
a test that kills a node starts it again. The packed environment of the spark-submit test (the
last) is built in the background while the tests before it run. Everything is stopped at the end
and no process of the data folder may outlive the module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from statestream.ingest import SAMPLE_FILE, RawEvent, file_lines, machine_data_pipeline
from statestream.join import SpecTemplate
from tests.integration.cluster_support import (
    JoinProcess,
    cluster_environment,
    cluster_settings,
    kill_service,
    leader_of,
    our_processes,
    produce_acks_all,
    replicated_topics,
    services_up,
    statistics_against_reference,
    topic_environment,
)
from tests.integration.ingest_support import expected_records, read_records
from tests.integration.submit_support import (
    EXECUTOR_PYTHON,
    SITE_PACKAGES,
    PackedEnvironment,
    PythonProcess,
    PythonProcessWatch,
    remove_packed,
    submit_pipeline,
)
from tests.integration.test_ingest_mqtt import _per_key
from tests.integration.test_join_job import _narrow_lines, _offline, _pair_key, _read_json
from tests.integration.test_stats_sample import RATED_KW
from tests.support import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

ROLES = {
    "kafka-broker-1",
    "kafka-broker-2",
    "kafka-broker-3",
    "spark-master",
    "spark-worker-1",
    "spark-worker-2",
}
ROWS = 800  # rows of the sample in a failure test: ~4,300 records, ~5 batches
PER_BATCH = "900"


@pytest.fixture(scope="module", autouse=True)
def packing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackedEnvironment]:
    """scripts/pack-spark-env.sh, started with the module (first of its fixtures)."""
    packed = PackedEnvironment(tmp_path_factory.mktemp("packed") / "dist")
    try:
        yield packed
    finally:
        packed.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a running cluster (`services up` done, with its duration in s)."""
    data_dir = tmp_path_factory.mktemp("cluster") / "data"
    env = cluster_environment(data_dir)
    started = time.monotonic()
    up = run_cli("services", "up", env=env, inherit_settings=False, timeout_s=240)
    env["UP_S"] = f"{time.monotonic() - started:.1f}"
    try:
        assert up.exit_code == 0, up.stderr + up.stdout
        yield env
    finally:
        down = run_cli("services", "down", env=env, inherit_settings=False, timeout_s=180)
        assert down.exit_code == 0, down.stderr
        assert our_processes(data_dir) == []


@pytest.fixture
def cluster_env(cluster: dict[str, str]) -> dict[str, str]:
    """The cluster's settings as environment, without the start-up figure."""
    return {k: v for k, v in cluster.items() if k != "UP_S"}


def test_status_json_has_one_running_object_per_process(cluster: dict[str, str]) -> None:
    print(f"services up: {cluster['UP_S']} s")
    result = run_cli("services", "status", "--json", env=cluster, inherit_settings=False)
    statuses = json.loads(result.stdout)
    local = {s["role"]: s for s in statuses if s["state"] != "external"}
    assert set(local) == ROLES
    assert all(s["state"] == "running" and s["pid"] and s["port"] for s in local.values())
    assert {s["service"] for s in local.values()} == {"kafka", "spark"}
    assert local["spark-master"]["port"] == int(cluster["STATESTREAM_SERVICES__SPARK_MASTER_PORT"])
    assert Path(local["kafka-broker-2"]["log"]).name == "kafka-2.log"
    assert result.exit_code == 3  # MQTT and InfluxDB are elsewhere and do not answer


def test_topics_have_three_replicas(cluster: dict[str, str]) -> None:
    created = run_cli("topics", "create", env=cluster, inherit_settings=False)
    assert created.exit_code == 0, created.stderr
    admin = AdminClient(cluster_settings(cluster).kafka.client_config())  # the admin's login
    topics = admin.list_topics(timeout=10).topics
    partitions = topics["machine.data"].partitions.values()
    assert [len(p.replicas) for p in partitions] == [3] * 5
    assert all(len(p.isrs) == 3 for p in partitions)  # the brokers' SCRAM login works
    anonymous = AdminClient(
        {"bootstrap.servers": cluster["STATESTREAM_KAFKA__BOOTSTRAP_SERVERS"], "log_level": 0}
    )
    with pytest.raises(KafkaException):  # no broker of the three lets one in
        anonymous.list_topics(timeout=5)


def test_a_broker_a_worker_and_the_driver_killed_lose_and_repeat_no_pair(
    cluster_env: dict[str, str], unique_name: str, tmp_path: Path
) -> None:
    """One join, the sample produced in quarters while its nodes die in turn, each kill -9:
    the leading broker (acks=all, 2 of 3 replicas in sync: the query goes on on two brokers);
    with the broker back, worker 2 with its executor and Python workers (Spark reschedules its
    tasks on worker 1); then the driver, started again with `--available-now` for the last
    quarter, going on from its checkpoint. The output holds every pair exactly once."""
    settings = replicated_topics(cluster_settings(cluster_env), unique_name, 3)
    lines = _narrow_lines("time", ROWS)
    quarter = len(lines) // 4
    parts = [lines[:quarter], lines[quarter : 2 * quarter], lines[2 * quarter : 3 * quarter]]
    parts.append(lines[3 * quarter :])
    produce_acks_all(settings, parts[0])
    env = {**cluster_env, **topic_environment(settings)}
    checkpoint = tmp_path / "checkpoint"
    job = JoinProcess(env, checkpoint, "--max-offsets-per-trigger", PER_BATCH)
    try:
        job.wait_for_batches(1)
        leader = leader_of(settings, settings.topics.machine_data)
        kill_service(settings, f"kafka-{leader}")
        produce_acks_all(settings, parts[1])
        job.wait_for_records(len(parts[0]) + len(parts[1]))  # the query runs on two brokers
        services_up(cluster_env)  # the broker again
        kill_service(settings, "spark-worker-2")
        produce_acks_all(settings, parts[2])
        job.wait_for_batches(1)  # a batch on the one worker left
        assert job.process.poll() is None, "the query stopped"
    finally:
        job.kill()  # the driver, most likely inside a batch: the master ends its executors
        services_up(cluster_env)  # worker 2 again
    produce_acks_all(settings, parts[3])
    again = JoinProcess(env, checkpoint, "--available-now", "--max-offsets-per-trigger", PER_BATCH)
    try:
        assert again.finish() == 0, again.failure()
    finally:
        again.kill()
    assert again.batches and again.batches[0][0] >= job.batches[-1][0] >= 2, (
        f"it did not go on from its checkpoint: {job.batches} then {again.batches}"
    )
    assert job.records_in + again.records_in >= len(lines)
    _assert_exactly_once(settings, lines)


def test_two_brokers_down_the_connector_waits_and_loses_nothing(
    cluster_env: dict[str, str], unique_name: str
) -> None:
    """Fewer live brokers than min.insync.replicas: `status` names the stopped ones; the
    connector's pipeline (its acks=all producer, `ingest.kafka_sink`) keeps its events
    unacknowledged, without an error, until the brokers are back; then every record is on its
    topic once, in order."""
    settings = replicated_topics(cluster_settings(cluster_env), unique_name, 1)
    pipeline = machine_data_pipeline(settings)  # as `connect mqtt` builds it, topics checked
    rows = list(file_lines(SAMPLE_FILE))[:20]
    try:
        for node in (2, 3):
            kill_service(settings, f"kafka-{node}")
        status = run_cli("services", "status", "--json", env=cluster_env, inherit_settings=False)
        states = {s["role"]: s for s in json.loads(status.stdout)}
        print({role: (s["state"], s["detail"]) for role, s in states.items()})
        assert status.exit_code == 3
        assert states["kafka-broker-2"]["state"] == states["kafka-broker-3"]["state"] == "stopped"
        assert states["kafka-broker-3"]["detail"] == (
            "1 of 3 Kafka brokers run, fewer than min.insync.replicas=2: no write can succeed "
            "and producers wait; start them with `statestream services up`"
        )
        for number, row in enumerate(rows):  # what the MQTT connector hands it, one per message
            pipeline.submit(RawEvent(row, settings.mqtt.topic, int(time.time() * 1000)), number)
        assert pipeline.poll(5) == []  # no event done (none acknowledged to MQTT), none failed
        assert pipeline.in_flight == len(rows)
    finally:
        services_up(cluster_env)
    assert pipeline.flush(120) == list(range(len(rows)))  # every event, in order
    got = read_records(settings, settings.topics.machine_data)
    assert _per_key(got) == expected_records(rows)  # every record once, in order per key


def test_the_pipeline_submitted_from_a_packed_environment_equals_local_mode(
    cluster_env: dict[str, str], packing: PackedEnvironment, unique_name: str, tmp_path: Path
) -> None:
    """scripts/pack-spark-env.sh (started with the module), then the docs' spark-submit of
    `run pipeline` (the join and the statistics; InfluxDB is elsewhere) on both workers: the
    output is local mode's (the offline join's pairs exactly once; levels, duty cycles, alerts
    and late records of the pandas reference, as test_stats_sample checks them in local mode),
    and the executors' Python came from the shipped archive, not from `.venv`. The other
    cluster tests run the join from the checkout's `.venv`."""
    settings = replicated_topics(cluster_settings(cluster_env), unique_name, 3)
    lines = _narrow_lines("time", ROWS)
    produce_acks_all(settings, lines)
    env = {
        **cluster_env,
        **topic_environment(settings),
        "STATESTREAM_SPARK__CHECKPOINT_ROOT": str(tmp_path / "checkpoints"),
        "STATESTREAM_STATS__RATED_POWER_KW": str(RATED_KW),
    }
    workers = Path(cluster_env["STATESTREAM_PATHS__DATA_DIR"]) / "spark"
    try:
        _submit_the_pipeline(packing, env, tmp_path, workers)
    finally:
        remove_packed(packing.out, workers)
    _assert_exactly_once(settings, lines)
    stats = statistics_against_reference(cluster_settings(env))
    print(stats)
    assert stats["level_windows"] > 0 and stats["levels_equal"]
    assert stats["duty_windows"] > 0 and stats["duty_equal"]
    assert stats["alerts"] > 0 and stats["alerts_equal"]
    assert stats["stats_late"] == stats["expected_stats_late"]


def _submit_the_pipeline(
    packing: PackedEnvironment, env: dict[str, str], tmp_path: Path, workers: Path
) -> None:
    """When the packing is done, spark-submit `run pipeline --available-now --no-sink --without
    quantity_stats` (the join and the statistics) from its folder while watching the executors'
    Python processes; check what they ran."""
    waited = time.monotonic()
    dist = packing.wait()
    packed_s, started = waited - packing.started, time.monotonic()
    with PythonProcessWatch(workers) as watch:
        options = ("--available-now", "--no-sink", "--without", "quantity_stats")  # join, stats
        job = submit_pipeline(dist, env, tmp_path / "job.err", *options)
        try:
            assert job.finish() == 0, job.failure()
        finally:
            job.kill()
    print(f"packing started {packed_s:.0f} s before; waited {started - waited:.0f} s for it")
    print(f"submitted and done in {time.monotonic() - started:.0f} s")
    print("\n".join(job.output))
    assert len(job.batches) >= 2, "no batch of the join and the statistics"
    _assert_the_executors_ran_the_archive(list(watch.processes.values()), workers)


def _assert_the_executors_ran_the_archive(seen: list[PythonProcess], workers: Path) -> None:
    """Each Python process in an executor's folder is statestream's worker daemon (or a worker
    it forked) run by the archive's interpreter, with every library from the archive unpacked
    in that folder, none from the checkout's `.venv`; both workers unpacked the archive."""
    print({str(p.cwd.relative_to(workers)): sorted(p.library_folders) for p in seen})
    assert seen, "no Python process in an executor's folder"
    for process in seen:
        daemon = f"{EXECUTOR_PYTHON} -m statestream.spark.patches.python_daemon"
        assert process.command.startswith(daemon), process.command
        assert process.library_folders <= {f"{process.cwd}/environment/{SITE_PACKAGES}"}, (
            f"{process.command} in {process.cwd} mapped {sorted(process.libraries)[:5]}"
        )
    assert any("/pyarrow/" in lib for p in seen for lib in p.libraries), "no task's pyarrow"
    (app,) = {process.cwd.parent.name for process in seen}
    for worker in ("worker-1", "worker-2"):
        assert list((workers / worker / "work" / app).glob("*/environment/bin/python"))


def _assert_exactly_once(settings, lines: list[bytes]) -> None:
    """Every pair of the offline join in read_committed output, none missing, none twice."""
    expected = {_pair_key(p) for p in _offline(lines, SpecTemplate())[0]}
    got = [_pair_key(p) for p in _read_json(settings, settings.topics.machine_out)]
    assert len(got) == len(set(got)), "a pair was written twice"
    assert set(got) == expected
