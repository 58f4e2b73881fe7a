"""Who may do what on the local brokers: SASL/SCRAM users, the listeners' logins and the ACLs.

The client listener (also the brokers' own, inter-broker) takes SASL/SCRAM-SHA-512 only; its users
are written into the metadata when the storage is formatted (`--add-scram`) with the passwords of
the secrets file. The controller listener takes SASL/PLAIN with one user, known only to the
brokers' configuration (KRaft keeps SCRAM users in the metadata log, which the controllers need
before they can read it). StandardAuthorizer refuses what no ACL allows; `acl_table` is the one
place that says what each component may do:

- statestream-admin: everything (super user): topics, ACLs, inter-broker traffic, tests;
- statestream-connector: write the input topics (machine data, vehicle positions), dead letters;
- statestream-jobs: read every topic, write every topic but the inputs, create the commits
  topic, use transactional ids `statestream.*` and consumer groups `spark-kafka-source-*`;
- statestream-dashboard: read every topic, use consumer groups `statestream-dashboard-*`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from statestream.config import KAFKA_ROLES, KafkaRole, Settings, local_user
from statestream.config.kafka import CONTROLLER_USER, LOCAL_MECHANISM, jaas_login
from statestream.errors import ServiceError
from statestream.exactly_once.markers import TRANSACTIONAL_ID_PREFIX

SPARK_GROUP_PREFIX = "spark-kafka-source-"
DASHBOARD_GROUP_PREFIX = "statestream-dashboard-"
USERS_FILE = "scram-users"  # in the broker's folder: written once its storage has the users
ADMIN_PROPERTIES = "kafka-admin.properties"  # in the data folder: the admin's login for tools


@dataclass(frozen=True)
class Grant:
    """`operations` on the `resource` named `name` (a prefix when `prefixed`)."""

    resource: ResourceType
    name: str
    operations: tuple[AclOperation, ...]
    prefixed: bool = False


def acl_table(settings: Settings) -> dict[KafkaRole, list[Grant]]:
    """What each component's user may do, on the topics the settings name."""
    topics = settings.topics
    inputs = [topics.machine_data, topics.vehicle_positions]
    every = sorted(set(topics.every))
    read, write = AclOperation.READ, AclOperation.WRITE
    topic = ResourceType.TOPIC
    return {
        "admin": [],  # a super user
        "connector": [Grant(topic, name, (write,)) for name in [*inputs, topics.dead_letter]],
        "jobs": [
            *(Grant(topic, name, (read,)) for name in every),
            *(Grant(topic, name, (write,)) for name in every if name not in inputs),
            Grant(topic, topics.commits, (AclOperation.CREATE,)),
            Grant(ResourceType.TRANSACTIONAL_ID, TRANSACTIONAL_ID_PREFIX, (write,), prefixed=True),
            Grant(ResourceType.GROUP, SPARK_GROUP_PREFIX, (read,), prefixed=True),
        ],
        "dashboard": [
            *(Grant(topic, name, (read,)) for name in every),
            Grant(ResourceType.GROUP, DASHBOARD_GROUP_PREFIX, (read,), prefixed=True),
        ],
    }


def acl_bindings(table: dict[KafkaRole, list[Grant]]) -> list[AclBinding]:
    """An ACL table as Kafka ACL bindings (allow, from any host)."""
    return [
        AclBinding(
            grant.resource,
            grant.name,
            ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL,
            f"User:{local_user(role)}",
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for role, grants in table.items()
        for grant in grants
        for operation in grant.operations
    ]


def grant_access(settings: Settings) -> None:
    """Create the ACLs of `acl_table` on the local brokers (again: no change); a no-op when the
    components do not log in as the local users (another cluster manages its own ACLs)."""
    _create(settings, acl_table(settings))


def grant_topics(settings: Settings, topics: Sequence[str], role: KafkaRole = "jobs") -> None:
    """Let `role` use topics of your own on the local brokers, as it uses statestream's: the
    jobs read, write and create them (a missing output topic is made on first write), the
    dashboard reads, the connector writes. E.g. the input and output topic of a PySpark job
    that writes with `statestream.spark.write_exactly_once`."""
    operations = {
        "jobs": (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE),
        "dashboard": (AclOperation.READ,),
        "connector": (AclOperation.WRITE,),
        "admin": (),
    }[role]
    grants = [Grant(ResourceType.TOPIC, topic, operations) for topic in topics]
    _create(settings, {role: grants})


def _create(
    settings: Settings, table: dict[KafkaRole, list[Grant]], timeout_s: float = 30.0
) -> None:
    bindings = acl_bindings(table)
    if not settings.kafka.local_users or not bindings:
        return
    admin = AdminClient(settings.kafka.client_config("admin"))
    futures = admin.create_acls(bindings, request_timeout=timeout_s)
    for binding, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            # confluent-kafka makes the operation an AclOperation, but annotates it as passed in
            operation = binding.operation.name  # type: ignore[union-attr]
            raise ServiceError(
                f"could not grant {binding.principal} {operation} on "
                f"{binding.name}: {exc.args[0].str()}"
            ) from None


def broker_security(settings: Settings) -> dict[str, str]:
    """server.properties lines: SCRAM on the client listener, PLAIN on the controller's, ACLs."""
    kafka = settings.kafka
    admin = jaas_login(LOCAL_MECHANISM, local_user("admin"), kafka.local_password("admin"))
    controller = kafka.local_password("controller")
    plain = jaas_login("PLAIN", CONTROLLER_USER, controller).rstrip(";")
    return {
        "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "sasl.mechanism.inter.broker.protocol": LOCAL_MECHANISM,
        "listener.name.broker.sasl.enabled.mechanisms": LOCAL_MECHANISM,
        f"listener.name.broker.{LOCAL_MECHANISM.lower()}.sasl.jaas.config": admin,
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": (
            f'{plain} user_{CONTROLLER_USER}="{controller}";'
        ),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{local_user('admin')};User:{CONTROLLER_USER}",
        "allow.everyone.if.no.acl.found": "false",
    }


def admin_properties_file(settings: Settings) -> Path:
    """Where `services up` writes the admin's login for Kafka's own tools (`--command-config`)."""
    return settings.paths.data_dir / ADMIN_PROPERTIES


def write_admin_properties(settings: Settings) -> None:
    """The admin's client login as a properties file (mode 0600), e.g. for `kafka-configs.sh
    --bootstrap-server localhost:9092 --command-config <this file> …`."""
    kafka = settings.kafka
    login = jaas_login(LOCAL_MECHANISM, local_user("admin"), kafka.local_password("admin"))
    lines = {
        "security.protocol": kafka.protocol,
        "sasl.mechanism": LOCAL_MECHANISM,
        "sasl.jaas.config": login,
    }
    text = "".join(f"{key}={value}\n" for key, value in lines.items())
    write_private(admin_properties_file(settings), text)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def tool_login(settings: Settings) -> str:
    """The options that let Kafka's own command-line tools in as the admin ('' elsewhere)."""
    options = f"--bootstrap-server {settings.kafka.bootstrap_servers.split(',')[0]}"
    if settings.kafka.local_users:
        options += f" --command-config {admin_properties_file(settings)}"
    return options


def scram_format_arguments(settings: Settings) -> list[str]:
    """`StorageTool format` arguments that write every component's SCRAM user."""
    arguments = []
    for role in KAFKA_ROLES:
        password = settings.kafka.local_password(role)
        user = f"{LOCAL_MECHANISM}=[name={local_user(role)},password={password}]"
        arguments += ["--add-scram", user]
    return arguments
