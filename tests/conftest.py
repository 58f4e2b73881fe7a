"""Fixtures shared by the whole suite: the settings, the local services and one SparkSession.

The services fixture starts Kafka, Mosquitto and InfluxDB when they are not running yet and stops
at the end only those it started, so a developer's running services are left as they were. Spark's
JVMs of the run compile with C1 only (`tests.support.TEST_JVM_ENVIRONMENT`): quicker to start.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from statestream.config import Settings, ensure_local_secrets, load_settings
from statestream.services import start_services, stop_services
from statestream.services.topics import create_topics
from tests.support import TEST_JVM_ENVIRONMENT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

for _variable, _value in TEST_JVM_ENVIRONMENT.items():  # this run's SparkSession and every job
    os.environ.setdefault(_variable, _value)  # it starts; a developer's own choice wins


@pytest.fixture(scope="session")
def settings() -> Settings:
    """The settings of this checkout (environment included), with the local secrets."""
    return ensure_local_secrets(load_settings())


@pytest.fixture(scope="session")
def local_services(settings: Settings) -> Iterator[Settings]:
    """Kafka, Mosquitto and InfluxDB running and answering, with the settings' topics created
    (as `make demo` leaves a machine); yields the settings to reach them."""
    statuses = start_services(settings)
    started = {s.name for s in statuses if s.state == "started"}
    create_topics(settings)
    yield settings
    if started:
        stop_services(settings, names=started)


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator[SparkSession]:
    """The one SparkSession of the test run (local master, UI off, small parallelism)."""
    from statestream.jobs.session import spark_session

    session = spark_session(settings, app_name="statestream-tests", for_tests=True)
    yield session
    session.stop()


@pytest.fixture
def unique_name() -> str:
    """A name no other test uses, for topics, databases and query names."""
    return f"test_{uuid.uuid4().hex[:10]}"
