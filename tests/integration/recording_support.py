"""What the record/replay tests share: a recorder as a child process or in a thread, timed
test traffic, the spacing measure, and the settings of one run of the demo's two feeds."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from statestream.config import Settings, settings_environment
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.ingest.mqtt import MqttConnection
from statestream.ingest.mqtt.publisher import MqttPublisher
from statestream.ingest.recording import (
    MqttRecorder,
    RecordedMessage,
    RecordingReader,
    RecordingWriter,
    Rotation,
)
from tests.integration.geo_support import geo_topic_settings
from tests.integration.ingest_support import delete_topics
from tests.support import granted


class RecorderProcess:
    """`statestream record mqtt` as a child process, its output in `log`."""

    def __init__(self, settings: Settings, log: Path, *args: str) -> None:
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("STATESTREAM_")},
            **settings_environment(settings),
        }
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "statestream", "record", "mqtt", *args],
                env=environment,
                stdout=out,
                stderr=out,
            )
        self.log = log
        deadline = time.monotonic() + 60
        while "subscribed to" not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, "the recorder did not subscribe"
            time.sleep(0.05)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)


def messages_of(path: Path) -> list[RecordedMessage]:
    """The messages of a recording now, the part being written included."""
    return list(RecordingReader([path]).messages())


def wait_for_messages(path: Path, count: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if len(messages_of(path)) >= count:
                return
        except Exception:  # no part yet
            pass
        time.sleep(0.1)
    raise AssertionError(f"{path}: fewer than {count} messages after {timeout_s} s")


def timed_traffic(root: str) -> list[tuple[float, str, bytes]]:
    """(seconds after the start, topic, payload) of a few seconds of mixed traffic."""
    rng = random.Random(47)
    topics = [f"{root}/in/a b/ä €", f"{root}/in/hfp/v2/journey/ongoing/vp/bus/0018/00423"]
    payloads = [
        lambda i: json.dumps({"VP": {"veh": i, "tst": "2026-11-25T06:15:30.123Z"}}).encode(),
        lambda i: rng.randbytes(rng.randrange(1, 64)),
        lambda i: f"line {i}\nline two\r\n".encode(),
        lambda i: b"",
        lambda i: f"text with spaces {i}".encode(),
        lambda i: b"x" * 10_000,
    ]
    out, at = [], 0.0
    for i in range(120):
        at += rng.choice([0.0, 0.004, 0.012, 0.03, 0.06])
        out.append((at, rng.choice(topics), rng.choice(payloads)(i)))
    return out


def publish_timed(
    settings: Settings, client_id: str, traffic: list[tuple[float, str, bytes]]
) -> list:
    """Publish each message at its time (QoS 1); the monotonic times they were sent."""
    connection = MqttConnection(settings.mqtt, client_id, clean_session=True)
    connection.connect()
    publisher = MqttPublisher(connection, "", qos=1, window=500)
    sent, start = [], time.monotonic()
    try:
        for at, topic, payload in traffic:
            time.sleep(max(0.0, start + at - time.monotonic()))
            sent.append(time.monotonic())
            publisher.publish_to([(topic, payload)])
            publisher.poll(0.0)
        publisher.drain()
    finally:
        connection.close()
    return sent


def spacing_p99_s(a: list[float], b: list[float]) -> float:
    """p99 of how much the gaps between consecutive messages of `b` differ from `a`'s."""
    assert len(a) == len(b) > 1
    gaps = zip(a, a[1:], b, b[1:], strict=False)  # the shifted lists are one shorter
    errors = sorted(abs((b2 - b1) - (a2 - a1)) for a1, a2, b1, b2 in gaps)
    return errors[max(0, math.ceil(0.99 * len(errors)) - 1)]


class RecorderThread:
    """`MqttRecorder` in a thread of the test, recording `topic_filter` to `path`."""

    def __init__(self, settings: Settings, topic_filter: str, path: Path, client_id: str):
        subscribed, self.stop = threading.Event(), threading.Event()
        self.writer = RecordingWriter(path, Rotation(compress=False))
        self.recorder = MqttRecorder(
            settings,
            [topic_filter],
            self.writer,
            client_id=client_id,
            on_subscribed=lambda _present: subscribed.set(),
        )
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert subscribed.wait(30), self.errors

    def _run(self) -> None:
        try:
            self.recorder.run(self.stop)
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)

    def wait_for(self, count: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while self.recorder.counts.messages < count and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        self.writer.close()
        assert not self.errors, self.errors


def iso(epoch_us: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=epoch_us)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def demo_feed_settings(settings: Settings, name: str, root: str, client_id: str) -> Settings:
    """Settings of one run of the demo's two feeds under the MQTT root `root` — machine rows on
    `root/machine/states`, HFP messages on `root/hfp/…`, both taken by a connector of client id
    `client_id` — into new Kafka topics named after `name`: the records, and what the join and
    the geo query write (partitions as `topics create` gives them)."""
    with_vehicles = geo_topic_settings(settings, name, settings.topics.vehicle_positions_partitions)
    topics = with_vehicles.topics.model_copy(
        update={"machine_data": f"{name}.data", "machine_out": f"{name}.out"}
    )
    new = [
        NewTopic(topics.machine_data, topics.machine_data_partitions, 1),
        NewTopic(topics.machine_out, topics.machine_out_partitions, 1),
    ]
    admin = AdminClient(settings.kafka.client_config())  # kept: its futures die with it
    for future in admin.create_topics(new).values():
        future.result()
    machine_topic = f"{root}/machine/states"
    processors = {machine_topic: "machine", root + TOPIC_FILTER: "vehicles"}
    ingest = settings.ingest.model_copy(update={"client_id": client_id, "processors": processors})
    mqtt = settings.mqtt.model_copy(update={"topic": machine_topic})
    return granted(
        with_vehicles.model_copy(update={"topics": topics, "mqtt": mqtt, "ingest": ingest})
    )


def delete_feed_topics(settings: Settings) -> None:
    """Delete the Kafka topics `demo_feed_settings` made."""
    topics = settings.topics
    delete_topics(
        settings,
        topics.machine_data,
        topics.machine_out,
        topics.vehicle_positions,
        topics.vehicle_cells,
        topics.vehicle_alerts,
        topics.late,
        topics.dead_letter,
    )
