"""KRaft Kafka brokers (broker and controller in one JVM each) run from the Maven jars.

One node by default; with `services.kafka_brokers` = 3, three nodes on their own ports and storage
form one cluster whose controller quorum is all three.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from statestream.config import Settings
from statestream.environment import find_java, jar_dir
from statestream.errors import ServiceError
from statestream.services.base import LocalService
from statestream.services.kafka_security import (
    USERS_FILE,
    broker_security,
    grant_access,
    scram_format_arguments,
    write_admin_properties,
    write_private,
)

CLUSTER_ID_FILE = "kafka-cluster.id"


class KafkaBroker(LocalService):
    """Kafka node `node` in KRaft combined mode: a listener and a controller port of its own.

    The storage is formatted on first start: a single node as a standalone quorum (`StorageTool
    format --standalone`), three nodes with one cluster id and a static quorum of all three. The
    transaction and offsets topics are replicated like the topics (`services.replication_factor`,
    `min_insync_replicas`), so Kafka transactions work on one node as on three. Clients log in
    with SASL/SCRAM (`statestream.services.kafka_security`): the users are written at format time,
    the ACLs granted once the brokers answer.
    """

    service = "kafka"
    start_timeout_s = 90.0
    stop_timeout_s = 40.0

    def __init__(self, settings: Settings, node: int = 1) -> None:
        super().__init__(settings)
        self.node = node
        self.single = settings.services.kafka_brokers == 1
        self.name = "kafka" if self.single else f"kafka-{node}"
        self.title = "Kafka" if self.single else f"Kafka broker {node}"
        kafka = settings.kafka
        self.listener_port, self.controller_port = settings.services.kafka_ports(
            kafka.port, kafka.controller_port, node
        )
        self.config_file = self.home / "server.properties"
        self.log4j_file = self.home / "log4j2.properties"
        self.data_dir = self.home / "data"
        self.jars_dir = settings.paths.jars_dir / "kafka-broker"

    @property
    def is_local(self) -> bool:
        return self.settings.kafka.is_local

    @property
    def role(self) -> str:
        return f"kafka-broker-{self.node}"

    @property
    def address(self) -> str:
        if self.single:
            return self.settings.kafka.bootstrap_servers
        return f"localhost:{self.listener_port}"

    @property
    def output_file(self) -> Path:
        return self.settings.paths.log_dir / f"{self.name}.out"

    def port_settings(self) -> dict[int, str]:
        return {
            self.listener_port: "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS",
            self.controller_port: "STATESTREAM_KAFKA__CONTROLLER_PORT",
        }

    def markers(self) -> tuple[str, ...]:
        return ("kafka.Kafka", str(self.config_file))

    def check_environment(self) -> None:
        find_java()
        jar_dir(self.settings.paths.jars_dir, "kafka-broker", "kafka_2.13-")

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.settings.paths.log_dir.mkdir(parents=True, exist_ok=True)
        self.log4j_file.write_text(_log4j2_properties(self.log_file))
        write_private(self.config_file, self._server_properties())  # it holds passwords
        write_admin_properties(self.settings)
        if self._check_formatted():
            self._check_users()
            return
        self._format_storage()
        (self.home / USERS_FILE).write_text(self.settings.kafka.mechanism or "")

    def after_start(self) -> None:
        """Grant the components their ACLs, once every broker answers (the last one started)."""
        if self.node == self.settings.services.kafka_brokers:
            grant_access(self.settings)

    def command(self) -> list[str]:
        return [
            *self._java_command(),
            f"-Xmx{self.settings.kafka.broker_heap}",
            "-Xms256m",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile=file:{self.log4j_file}",
            f"-Dkafka.logs.dir={self.settings.paths.log_dir}",
            "kafka.Kafka",
            str(self.config_file),
        ]

    def health(self) -> str | None:
        problem = kafka_health(self.settings)
        if problem is not None or self.single:
            return problem
        return _node_problem(self.settings, self.node, self.listener_port)

    def _java_command(self) -> list[str]:
        return [find_java(), "-cp", f"{self.jars_dir}/*"]

    def _server_properties(self) -> str:
        port, controller = self.listener_port, self.controller_port
        services = self.settings.services
        replicas, min_isr = str(services.replication_factor), str(services.min_insync_replicas)
        listeners = f"BROKER://localhost:{port},CONTROLLER://localhost:{controller}"
        lines = {
            "process.roles": "broker,controller",
            "node.id": str(self.node),
            **self._quorum(),
            "listeners": listeners,
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            **broker_security(self.settings),
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
        }
        body = "\n".join(f"{key}={value}" for key, value in lines.items())
        return f"# generated by statestream from its settings; edits are overwritten\n{body}\n"

    def _quorum(self) -> dict[str, str]:
        """A single node's dynamic quorum of itself, or the static quorum of all nodes."""
        if self.single:
            return {"controller.quorum.bootstrap.servers": f"localhost:{self.controller_port}"}
        kafka, services = self.settings.kafka, self.settings.services
        voters = [
            f"{node}@localhost:{services.kafka_ports(kafka.port, kafka.controller_port, node)[1]}"
            for node in range(1, services.kafka_brokers + 1)
        ]
        return {"controller.quorum.voters": ",".join(voters)}

    def _check_formatted(self) -> bool:
        """True when the storage was formatted; a clear error when its meta.properties is bad."""
        meta = self.data_dir / "meta.properties"
        if not meta.exists():
            return False
        try:
            pairs = dict(
                line.split("=", 1)
                for line in meta.read_text().splitlines()
                if line.strip() and not line.startswith("#")
            )
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ServiceError(
                _corrupt(self.data_dir, f"{meta.name} is unreadable ({exc})")
            ) from None
        if "cluster.id" not in pairs or pairs.get("node.id") != str(self.node):
            raise ServiceError(_corrupt(self.data_dir, f"{meta.name} lacks cluster.id or node.id"))
        return True

    def _check_users(self) -> None:
        """A clear error for storage formatted before the brokers had users (no SCRAM)."""
        if (self.home / USERS_FILE).is_file():
            return
        folders = str(self.home)
        if not self.single:
            folders = f"{self.home.parent}/kafka-1 … kafka-{self.settings.services.kafka_brokers}"
        raise ServiceError(
            f"Kafka's storage in {self.data_dir} was formatted without SCRAM users (an older "
            f"statestream): run `statestream services down`, delete {folders} (their topics "
            "are lost) and run `statestream services up`"
        )

    def _format_storage(self) -> None:
        command = [
            *self._java_command(),
            f"-Dlog4j2.configurationFile=file:{self.log4j_file}",
            "kafka.tools.StorageTool",
            "format",
            *(["--standalone"] if self.single else []),
            "--cluster-id",
            self._cluster_id(),
            "--config",
            str(self.config_file),
            *scram_format_arguments(self.settings),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ServiceError(
                f"formatting Kafka's storage in {self.data_dir} failed: {last[0]} — delete "
                f"{self.home} and run `statestream services up` again"
            )

    def _cluster_id(self) -> str:
        """A new id for a single node; the one id all nodes of a cluster share (made once)."""
        if self.single:
            return _new_cluster_id()
        path = self.settings.paths.data_dir / CLUSTER_ID_FILE
        if not path.is_file():
            path.write_text(_new_cluster_id() + "\n")
        return path.read_text().strip()


def kafka_health(settings: Settings, timeout_s: float = 3.0) -> str | None:
    """None when the brokers in the settings answer a metadata request, else why not.

    With the local brokers of `services.kafka_brokers`, fewer live brokers than
    `min.insync.replicas` is a problem too: no acks=all write can succeed then.
    """
    errors: list[KafkaError] = []
    admin = AdminClient(
        {
            **settings.kafka.client_config(),
            "log_level": 0,
            # confluent-kafka's stub of AdminClient leaves out the callbacks it takes
            "error_cb": errors.append,  # type: ignore[dict-item]
        }
    )
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        admin.poll(0)  # serves the error callbacks: a refused login is reported there
        refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        if refused:
            return _login_refused(settings, refused[0])
        reason = exc.args[0].str() if exc.args and isinstance(exc.args[0], KafkaError) else exc
        return f"no answer from {settings.kafka.bootstrap_servers} ({reason})"
    if not metadata.brokers:
        return f"{settings.kafka.bootstrap_servers} answered without brokers"
    services = settings.services
    if settings.kafka.is_local and len(metadata.brokers) < services.min_insync_replicas:
        return (
            f"only {len(metadata.brokers)} of {services.kafka_brokers} Kafka brokers are live, "
            f"fewer than min.insync.replicas={services.min_insync_replicas}: no write can "
            "succeed; start the others with `statestream services up`"
        )
    return None


def _login_refused(settings: Settings, error: KafkaError) -> str:
    """Why the admin's login failed, and what to check."""
    kafka = settings.kafka
    login = kafka.credentials("admin")
    user = login[0] if login else "an anonymous client"
    where = (
        f"the passwords in {settings.paths.secrets_file} are those the local brokers were "
        f"formatted with (else delete {settings.paths.data_dir}/kafka* after `services down`)"
        if kafka.local_users
        else "kafka.sasl_username and kafka.sasl_password"
    )
    reason = "wrong password" if "invalid credentials" in error.str() else error.str()
    return f"{kafka.bootstrap_servers} refuses the login of {user} ({reason}); check {where}"


def _node_problem(settings: Settings, node: int, port: int) -> str | None:
    """None when broker `node` answers on its own port and is in the cluster's metadata."""
    admin = AdminClient(
        {
            **settings.kafka.client_config(),
            "bootstrap.servers": f"localhost:{port}",
            "log_level": 0,
            "error_cb": lambda _err: None,  # type: ignore[dict-item]  # see kafka_health
        }
    )
    try:
        metadata = admin.list_topics(timeout=3.0)
    except KafkaException:
        return f"broker {node} does not answer on localhost:{port}"
    if node not in metadata.brokers:
        return f"broker {node} answers on localhost:{port} but is not in the cluster's metadata"
    return None


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes in URL-safe base64 without padding, not led by '-'."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _corrupt(data_dir: Path, reason: str) -> str:
    return (
        f"Kafka's data folder {data_dir} is corrupt: {reason}; delete {data_dir.parent} to start "
        "an empty broker (its topics are lost)"
    )


def _log4j2_properties(log_file: Path) -> str:
    return f"""# generated by statestream: the broker logs to {log_file.name}, rolled at 20 MB
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.filePattern = {log_file}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
