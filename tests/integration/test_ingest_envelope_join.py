"""The event envelope on real Kafka, in both encodings: records round-trip through the topic, and
the real streaming join reads them and gives the offline join's pairs."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from statestream.config import Settings
from statestream.ingest import (
    SAMPLE_FILE,
    MachineRecord,
    ReplayConnector,
    SimulationPlan,
    codec_for,
    file_lines,
    machine_data_pipeline,
)
from statestream.join import SpecTemplate
from statestream.offline_join import join_lines
from statestream.queries.join.job import JoinJobOptions, start_join_query
from tests.integration.ingest_support import delete_topics, expected_records, read_records
from tests.integration.test_join_job import _pair_key, _topic_settings
from tests.support import read_committed

pytestmark = pytest.mark.integration

ROWS = list(SimulationPlan(lines=list(file_lines(SAMPLE_FILE))[:1500], order="time").payloads())


def _settings(settings: Settings, name: str, envelope: str) -> Settings:
    with_topics = _topic_settings(settings, name, partitions=3)
    ingest = settings.ingest.model_copy(update={"envelope": envelope})
    return with_topics.model_copy(update={"ingest": ingest})


def _offline_pairs(template: SpecTemplate) -> set[tuple]:
    quantities = sorted({key.split(".", 1)[1] for key in expected_records(ROWS)})
    out = io.StringIO()
    join_lines(ROWS, template.specs_for(quantities), out, io.StringIO, flush=False)
    return {_pair_key(json.loads(line)) for line in out.getvalue().splitlines()}


@pytest.fixture
def envelope_settings(
    local_services: Settings, unique_name: str, request: pytest.FixtureRequest
) -> Iterator[Settings]:
    settings = _settings(local_services, unique_name, request.param)
    yield settings
    topics = settings.topics
    delete_topics(
        settings, topics.machine_data, topics.machine_out, topics.late, topics.dead_letter
    )


@pytest.mark.parametrize("envelope_settings", ["json", "protobuf"], indirect=True)
def test_enveloped_records_round_trip_and_the_join_reads_them(
    spark, envelope_settings: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings, envelope = envelope_settings, envelope_settings.ingest.envelope
    pipeline = machine_data_pipeline(settings)
    ReplayConnector(ROWS, "test").run(pipeline, threading.Event())

    codec = codec_for(envelope)  # type: ignore[arg-type]
    got: dict[str, list[tuple[float, float]]] = {}
    for key, value in read_records(settings, settings.topics.machine_data):
        record, ingestion_ms = codec.decode(value)
        assert isinstance(record, MachineRecord) and key == record.key
        assert ingestion_ms is not None and ingestion_ms > 1.7e12
        got.setdefault(key, []).append((record.phenomenon_time_ms, record.result))
    assert got == expected_records(ROWS)

    template = SpecTemplate()
    query = start_join_query(
        spark,
        settings,
        JoinJobOptions(
            available_now=True,
            query_name=unique_name,
            templates=(template,),
            checkpoint=tmp_path / "checkpoint",
        ),
    )
    query.awaitTermination()
    assert query.exception() is None
    pairs = [json.loads(value) for value in read_committed(settings, settings.topics.machine_out)]
    expected = _offline_pairs(template)
    assert len(expected) > 100
    assert len(pairs) == len(expected)
    assert {_pair_key(pair) for pair in pairs} == expected
    assert read_committed(settings, settings.topics.dead_letter) == []
