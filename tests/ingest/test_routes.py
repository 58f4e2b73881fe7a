"""Routing by MQTT topic filter: one pipeline serves machine rows and vehicle positions, each
message goes to its processor and topic, and no connector code knows either use case."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from statestream.config import IngestSettings, Settings
from statestream.errors import ConfigError
from statestream.ingest import IngestPipeline, RawEvent
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.ingest.routes import TopicFilter, processor_filters, settings_routes
from tests.fuzz_inputs import VP_EVENT, VP_TOPIC
from tests.ingest.test_fuzz_pipeline import MemorySink

ROW = b'{"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5, "aaAcc_C11": 2}'
VP = json.dumps({"VP": VP_EVENT}).encode()


@pytest.mark.parametrize(
    ("topic_filter", "topic", "matches"),
    [
        ("machine/states", "machine/states", True),
        ("machine/states", "machine/states/x", False),
        ("machine/+", "machine/states", True),
        ("machine/+", "machine/", True),
        ("machine/+", "machine/states/x", False),
        ("machine/#", "machine", True),  # the parent level too
        ("machine/#", "machine/a/b", True),
        ("machine/#", "machinery/a", False),
        ("#", "anything/at/all", True),
        ("#", "$SYS/broker/load", False),  # a wildcard never matches $ topics
        ("+/hfp/v2/#", "root/hfp/v2/journey", True),
        (TOPIC_FILTER, VP_TOPIC, True),
        (TOPIC_FILTER, VP_TOPIC.replace("/vp/", "/doo/"), False),
        ("a.b/(c)", "a.b/(c)", True),  # no regular expression in a filter
        ("a.b/(c)", "axb/(c)", False),
    ],
)
def test_mqtt_wildcards_match_as_the_broker_matches(
    topic_filter: str, topic: str, matches: bool
) -> None:
    assert TopicFilter(topic_filter).matches(topic) is matches


@pytest.mark.parametrize("text", ["", "a/#/b", "a/b#", "a+/b", "#/a"])
def test_a_bad_filter_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="not an MQTT topic filter"):
        TopicFilter(text)


def test_by_default_mqtt_topic_is_machine_rows_and_hfp_vp_is_vehicles() -> None:
    settings = Settings()
    assert processor_filters(settings) == {"machine/states": "machine", TOPIC_FILTER: "vehicles"}
    routes = settings_routes(settings)
    assert [(r.kind, r.topic) for r in routes] == [
        ("machine", "machine.data"),
        ("vehicles", "input.vehicle.positions"),
    ]


def test_the_processors_setting_chooses_filters_and_kinds() -> None:
    settings = _settings({"plant/+/rows": "machine", "city/hfp/v2/journey/#": "vehicles"})
    assert [r.topic_filter for r in settings_routes(settings)] == [
        "plant/+/rows",
        "city/hfp/v2/journey/#",
    ]
    with pytest.raises(ConfigError, match="unknown processor 'ships'"):
        settings_routes(_settings({"sea/#": "ships"}))  # model_copy does not validate
    with pytest.raises(ValidationError, match="machine"):
        IngestSettings(processors={"sea/#": "ships"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="empty"):
        settings_routes(_settings({}))


def test_each_message_goes_to_its_processor_and_topic_with_its_key() -> None:
    sink = MemorySink()
    pipeline = _pipeline(sink)
    events = [
        RawEvent(ROW, "machine/states", 1),
        RawEvent(VP, VP_TOPIC, 2),
        RawEvent(VP, "machine/states", 3),  # a VP payload on the machine topic: a bad row
        RawEvent(ROW, VP_TOPIC, 4),  # a machine row on an HFP topic: no HFP payload
        RawEvent(ROW, "other/topic", 5),  # no route: dead letter
    ]
    for index, event in enumerate(events):
        pipeline.submit(event, index)
    assert pipeline.flush(1.0) == [0, 1, 2, 3, 4]
    sent = [(topic, key) for topic, key, _ in sink.sent]
    assert sent == [
        ("machine.data", b"R0815.vaLoad_C11"),
        ("machine.data", b"R0815.aaAcc_C11"),
        ("input.vehicle.positions", b"22/1234"),
        ("dead", b"machine/states"),
        ("dead", VP_TOPIC.encode()),
        ("dead", b"other/topic"),
    ]
    assert pipeline.counts.rejected == {"missing_thing": 1, "hfp_bad_json": 1, "unrouted": 1}
    vehicle_value = json.loads(sink.sent[2][2])
    assert vehicle_value["vehicle"] == "22/1234" and vehicle_value["phenomenonTime"] > 0
    assert pipeline.topic_filters == ["machine/states", TOPIC_FILTER]


def _pipeline(sink: MemorySink) -> IngestPipeline:
    return IngestPipeline(
        settings_routes(Settings()),
        sink,  # type: ignore[arg-type]
        "dead",
        max_payload_bytes=65_536,
        dead_letter_raw_bytes=1_024,
    )


def _settings(processors: dict[str, str]) -> Settings:
    settings = Settings()
    ingest = settings.ingest.model_copy(update={"processors": processors})
    return settings.model_copy(update={"ingest": ingest})
