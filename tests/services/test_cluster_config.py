"""The generated configuration and commands of the local cluster: Kafka nodes, Spark daemons."""

from __future__ import annotations

import sys

from statestream.config import KAFKA_ROLES, load_settings
from statestream.services import local_services
from statestream.services.kafka import KafkaBroker
from statestream.services.spark import MASTER_CLASS, WORKER_CLASS, SparkMaster, SparkWorker

PASSWORDS = {f"{role}_password": f"{role}-pw" for role in (*KAFKA_ROLES, "controller")}


def test_three_kafka_nodes_share_a_quorum_and_replicate_by_three() -> None:
    settings = load_settings(
        kafka={"bootstrap_servers": "localhost:19092", "controller_port": 19093, **PASSWORDS},
        services={"kafka_brokers": 3},
    )
    node = KafkaBroker(settings, 2)
    assert (node.name, node.role, node.port, node.address) == (
        "kafka-2",
        "kafka-broker-2",
        19094,
        "localhost:19094",
    )
    props = dict(
        line.split("=", 1)
        for line in node._server_properties().splitlines()
        if line and not line.startswith("#")
    )
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == (
        "1@localhost:19093,2@localhost:19095,3@localhost:19097"
    )
    assert props["listeners"] == "BROKER://localhost:19094,CONTROLLER://localhost:19095"
    for key in ("default.replication.factor", "transaction.state.log.replication.factor"):
        assert props[key] == "3"
    assert props["min.insync.replicas"] == props["transaction.state.log.min.isr"] == "2"
    assert set(node.port_settings()) == {19094, 19095}


def test_kafka_nodes_take_logins_only_and_authorize_by_acl() -> None:
    settings = load_settings(kafka={"bootstrap_servers": "localhost:19092", **PASSWORDS})
    props = dict(
        line.split("=", 1)
        for line in KafkaBroker(settings)._server_properties().splitlines()
        if line and not line.startswith("#")
    )
    assert props["listener.security.protocol.map"] == (
        "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    )
    assert props["listener.name.broker.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["listener.name.controller.sasl.enabled.mechanisms"] == "PLAIN"
    assert (
        'user_statestream-controller="controller-pw"'
        in (props["listener.name.controller.plain.sasl.jaas.config"])
    )
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:statestream-admin;User:statestream-controller"


def test_a_single_kafka_node_keeps_its_name_and_replication_one() -> None:
    node = KafkaBroker(load_settings(kafka=PASSWORDS))
    assert (node.name, node.role, node.single) == ("kafka", "kafka-broker-1", True)
    text = node._server_properties()
    assert "controller.quorum.bootstrap.servers=localhost:9093" in text
    assert "offsets.topic.replication.factor=1" in text


def test_spark_workers_follow_the_master_with_their_own_ports() -> None:
    settings = load_settings(
        services={"spark_workers": 2, "spark_worker_cores": 1, "spark_worker_memory": "1g"}
    )
    names = [s.name for s in local_services(settings)]
    assert names[-3:] == ["spark-master", "spark-worker-1", "spark-worker-2"]
    master, worker = SparkMaster(settings), SparkWorker(settings, 2)
    assert master.command()[1] == MASTER_CLASS and "--properties-file" in master.command()
    assert master.command()[0].endswith("pyspark/bin/spark-class")
    command = worker.command()
    assert command[1] == WORKER_CLASS
    assert command[command.index("--port") + 1] == "7079"
    assert command[command.index("--webui-port") + 1] == "8082"
    assert command[command.index("--cores") + 1] == "1"
    assert command[command.index("--memory") + 1] == "1g"
    assert command[-1] == "spark://localhost:7077"
    assert worker.environment()["PYSPARK_PYTHON"] == sys.executable
    assert (worker.start_wave, master.start_wave) == (1, 0)
    assert worker.home == settings.paths.data_dir / "spark" / "worker-2"


def test_no_spark_cluster_without_workers() -> None:
    assert [s.service for s in local_services(load_settings())] == [
        "kafka",
        "mosquitto",
        "influxdb",
    ]
