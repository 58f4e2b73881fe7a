"""The local brokers let only statestream's users in, and each user only do its component's work.

Before SASL/SCRAM, the broker listened PLAINTEXT: any local process could write fake machine
data. These tests log in as real clients would: anonymous, with a wrong password, as each user.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pydantic import SecretStr

from statestream.config import KafkaRole, Settings
from statestream.services.kafka import kafka_health
from statestream.testing import read_records
from tests.support import granted, run_cli

pytestmark = pytest.mark.integration

TOPICS = ("machine_data", "dead_letter", "machine_out", "stats")


@pytest.fixture
def own(local_services: Settings, unique_name: str) -> Iterator[Settings]:
    """The settings with topics of this test's own, the components granted their ACLs on them."""
    names = {field: f"{unique_name}.{field}" for field in TOPICS}
    admin = AdminClient(local_services.kafka.client_config())
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names.values()]).values():
        future.result()
    topics = local_services.topics.model_copy(update=names)
    yield granted(local_services.model_copy(update={"topics": topics}))
    for future in admin.delete_topics(list(names.values())).values():
        future.result(30)


def _produce(config: dict[str, str], topic: str, value: bytes) -> tuple[KafkaError | None, list]:
    """What delivering one record said (None: written), and the client's errors."""
    errors: list[KafkaError] = []
    producer = Producer(
        {**config, "error_cb": errors.append, "log_level": 0, "message.timeout.ms": 3000}
    )
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value=value, on_delivery=lambda error, _msg: outcome.append(error))
    producer.flush(15)
    assert outcome, "the delivery report never came"
    return outcome[0], errors


def _as(settings: Settings, role: KafkaRole) -> dict[str, str]:
    return settings.kafka.client_config(role)


def _never_written(settings: Settings, topic: str, value: bytes) -> bool:
    return all(record[2] != value for record in read_records(settings, topic))


def test_an_anonymous_plaintext_client_can_no_longer_write_machine_data(own: Settings) -> None:
    anonymous = {"bootstrap.servers": own.kafka.bootstrap_servers}
    error, _ = _produce(anonymous, own.topics.machine_data, b"fake")
    assert error is not None and error.code() == KafkaError._MSG_TIMED_OUT
    assert _never_written(own, own.topics.machine_data, b"fake")


def test_a_wrong_password_is_refused(own: Settings) -> None:
    config = {**_as(own, "connector"), "sasl.password": "not-the-password"}
    error, errors = _produce(config, own.topics.machine_data, b"fake")
    assert error is not None
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert _never_written(own, own.topics.machine_data, b"fake")


def test_the_controller_listener_is_no_back_door(local_services: Settings) -> None:
    kafka, services = local_services.kafka, local_services.services
    controller = services.kafka_ports(kafka.port, kafka.controller_port, 1)[1]
    for config in ({}, _as(local_services, "admin")):
        admin = AdminClient(
            {
                **config,
                "bootstrap.servers": f"localhost:{controller}",
                "log_level": 0,
                "error_cb": lambda _error: None,
            }
        )
        with pytest.raises(Exception):  # noqa: B017 - refused, whichever way librdkafka says it
            admin.list_topics(timeout=2)  # a back door would answer at once


@pytest.mark.parametrize(
    ("role", "topic", "allowed"),
    [
        ("connector", "machine_data", True),
        ("connector", "dead_letter", True),
        ("connector", "machine_out", False),
        ("jobs", "machine_out", True),
        ("jobs", "machine_data", False),
        ("dashboard", "stats", False),
    ],
)
def test_each_user_writes_only_its_components_topics(
    own: Settings, role: KafkaRole, topic: str, allowed: bool
) -> None:
    error, _ = _produce(_as(own, role), getattr(own.topics, topic), role.encode())
    if allowed:
        assert error is None
    else:
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_the_dashboard_sees_the_outputs_but_the_connector_does_not(own: Settings) -> None:
    topic = own.topics.machine_out
    for role, readable in (("dashboard", True), ("connector", False)):
        consumer = Consumer(
            {
                **_as(own, role),
                "group.id": f"statestream-dashboard-{role}",
                "log_level": 0,
            }
        )
        try:
            error = consumer.list_topics(topic, timeout=10).topics[topic].error
        finally:
            consumer.close()
        refusal = error.code() if error is not None else None
        assert refusal == (None if readable else KafkaError.TOPIC_AUTHORIZATION_FAILED), role


def test_a_wrong_admin_password_is_named_by_the_health_check(local_services: Settings) -> None:
    kafka = local_services.kafka.model_copy(update={"admin_password": SecretStr("wrong")})
    problem = kafka_health(local_services.model_copy(update={"kafka": kafka}))
    assert problem is not None
    assert "refuses the login of statestream-admin (wrong password)" in problem
    assert str(local_services.paths.secrets_file) in problem


def test_topics_grant_lets_the_jobs_use_a_topic_of_your_own(
    local_services: Settings, unique_name: str
) -> None:
    topic = f"{unique_name}.mine"
    admin = AdminClient(local_services.kafka.client_config())  # alive until the topic is made
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    error, _ = _produce(_as(local_services, "jobs"), topic, b"before")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    result = run_cli("topics", "grant", topic)
    assert result.exit_code == 0, result.stderr
    assert f"statestream-jobs may now use {topic}" in result.stdout
    error, _ = _produce(_as(local_services, "jobs"), topic, b"after")
    assert error is None
