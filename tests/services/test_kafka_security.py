"""The ACL table: every topic statestream creates is covered; each component gets only its part."""

from __future__ import annotations

from confluent_kafka.admin import AclOperation, ResourceType

from statestream.config import KAFKA_ROLES, load_settings
from statestream.services import acl_table, topic_specs
from statestream.services.kafka_security import scram_format_arguments

PASSWORDS = {f"{role}_password": f"{role}-pw" for role in (*KAFKA_ROLES, "controller")}


def _topics(grants: list, operation: AclOperation) -> set[str]:
    return {
        g.name for g in grants if g.resource == ResourceType.TOPIC and operation in g.operations
    }


def test_the_jobs_and_the_dashboard_read_every_topic_statestream_creates() -> None:
    settings = load_settings()
    table = acl_table(settings)
    created = {spec.name for spec in topic_specs(settings)}
    assert _topics(table["jobs"], AclOperation.READ) == created
    assert _topics(table["dashboard"], AclOperation.READ) == created
    assert _topics(table["dashboard"], AclOperation.WRITE) == set()


def test_only_the_connector_writes_the_input_topics() -> None:
    settings = load_settings()
    topics, table = settings.topics, acl_table(settings)
    inputs = {topics.machine_data, topics.vehicle_positions}
    assert _topics(table["connector"], AclOperation.WRITE) == inputs | {topics.dead_letter}
    assert _topics(table["connector"], AclOperation.READ) == set()
    jobs_write = _topics(table["jobs"], AclOperation.WRITE)
    assert not inputs & jobs_write
    assert {topics.machine_out, topics.stats, topics.commits} <= jobs_write


def test_the_jobs_transactional_ids_and_groups_are_prefixes() -> None:
    grants = acl_table(load_settings())["jobs"]
    prefixed = {(g.resource, g.name) for g in grants if g.prefixed}
    assert prefixed == {
        (ResourceType.TRANSACTIONAL_ID, "statestream."),
        (ResourceType.GROUP, "spark-kafka-source-"),
    }


def test_formatting_adds_one_scram_user_per_component() -> None:
    arguments = scram_format_arguments(load_settings(kafka=PASSWORDS))
    users = arguments[1::2]
    assert arguments[::2] == ["--add-scram"] * 4
    assert users[0] == "SCRAM-SHA-512=[name=statestream-admin,password=admin-pw]"
    assert {u.split(",")[0] for u in users} == {
        f"SCRAM-SHA-512=[name=statestream-{role}"
        for role in ("admin", "connector", "jobs", "dashboard")
    }
