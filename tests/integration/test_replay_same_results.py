"""A recording of the demo's MQTT traffic, replayed without `--shift-time` into fresh topics and
checkpoints, gives the join pairs and final cells of the run that was recorded.

The recorded run: the demo's two feeds — machine rows as `make demo`'s simulator sends them
(time order, three machines, event times that follow the clock) and 20 simulated HSL vehicles
— published at once to Mosquitto under a root of the test's own, while `statestream record
mqtt` records them and `statestream connect mqtt` forwards them into new Kafka topics; then
the join and the geo query, each to the end, one after the other (as `run pipeline
--available-now` runs them; the geo query in a few micro-batches, so that its watermark moves
and the first window's cells become final).

The replayed run: `statestream replay` publishes the recording to the broker again (speed 0),
a second connector forwards it into other new topics, and the same queries run on checkpoints
of their own. It proves that

- the replay puts the same records on every partition of the machine-data and positions topics,
  in the same order: the recording kept every message, its bytes (event times included) and
  each publisher's order;
- Spark therefore cuts both runs into the same micro-batches, and the geo query's watermark,
  which moves once per batch, moves alike;
- the join's pairs are the same, as a multiset of (thing, quantity, time, result, left, right),
  and so are the final cells (the latest final result of each cell and window) and the late
  records.

The replay goes to the broker, on the recorded topics, and through a connector rather than
`--to kafka` (which feeds the same processors; `test_record_replay.py` checks it): so it stands
in for the live feed along the whole path the recording was taken from, and a recording in
HSL's dump format is shown to go through `connect mqtt` and `run geo`. The recorded run takes
the path of `test_vehicle_chain.py` (simulator, Mosquitto, connector, geo), whose cells that
test compares with pandas + h3: the replayed run's cells are right, not only alike.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from statestream.config import Settings, settings_environment
from statestream.ingest import SAMPLE_FILE, SimulationPlan, codec_for, file_lines
from statestream.ingest.connector_process import ConnectorProcess
from statestream.ingest.mqtt import forget_session
from statestream.ingest.vehicle_delivery import VehicleSimulation, run_vehicle_simulation
from statestream.ingest.vehicle_positions import vehicle_codec_for
from statestream.queries import query
from statestream.queries.launch import RunOptions, start_queries
from statestream.testing import read_records
from tests.integration.geo_support import BASE_MS, assert_same_cells, latest_finals, read_json
from tests.integration.ingest_support import expected_records, publish, wait_for_records
from tests.integration.recording_support import (
    RecorderProcess,
    delete_feed_topics,
    demo_feed_settings,
    wait_for_messages,
)
from tests.support import run_cli

pytestmark = pytest.mark.integration

SAMPLE_ROWS = list(file_lines(SAMPLE_FILE))[:100]  # × 3 machines: 300 rows, ~1,500 records
# 20 vehicles for 60 s from half a minute into a window (~1,200 messages): the watermark passes
# the end of the first window well before the last batch, the second window stays open
VEHICLES = VehicleSimulation(vehicles=20, duration_s=60, seed=47, start_ms=BASE_MS + 30_000)
GEO_MAX_OFFSETS = 450  # the geo query's ~1,200 positions in three micro-batches


@dataclass(frozen=True)
class Runs:
    """The settings of the recorded run and of the replayed one, both feeds under `root`."""

    root: str
    recorded: Settings
    replayed: Settings

    @property
    def recorder_id(self) -> str:
        return f"{self.root}-record"


@dataclass(frozen=True)
class Sent:
    """What the feeds sent: MQTT messages, and the records they stand for."""

    messages: int
    machine_records: int
    positions: int


@pytest.fixture
def runs(local_services: Settings, unique_name: str) -> Iterator[Runs]:
    """Kafka topics of each run, and the MQTT sessions of the test, removed at the end."""
    root = unique_name
    recorded = demo_feed_settings(local_services, unique_name, root, unique_name)
    replayed = demo_feed_settings(
        local_services, f"{unique_name}_replay", root, f"{unique_name}-replay"
    )
    runs = Runs(root, recorded, replayed)
    yield runs
    for client_id in (recorded.ingest.client_id, replayed.ingest.client_id, runs.recorder_id):
        forget_session(local_services.mqtt, client_id)
    delete_feed_topics(recorded)
    delete_feed_topics(replayed)


def test_a_replay_without_shift_time_gives_the_recorded_runs_pairs_and_final_cells(
    spark, runs: Runs, tmp_path: Path
) -> None:
    recorded, replayed, recording = runs.recorded, runs.replayed, tmp_path / "demo.log"
    sent = _record_the_demo_feeds(runs, recording, tmp_path)
    recorded_batches = _run_join_and_geo(spark, recorded, tmp_path / "recorded")
    _replay(replayed, recording, sent, tmp_path)
    assert _inputs(replayed) == _inputs(recorded)
    replayed_batches = _run_join_and_geo(spark, replayed, tmp_path / "replayed")

    geo_batches = _sizes(recorded_batches["geo"])
    assert len(geo_batches) >= 2 and sum(geo_batches) == sent.positions
    assert _sizes(replayed_batches["geo"]) == geo_batches
    pairs = _pairs(recorded)
    assert sum(pairs.values()) > 100
    assert _pairs(replayed) == pairs
    finals = latest_finals(read_json(recorded, recorded.topics.vehicle_cells))
    assert {window for _, window in finals} == {BASE_MS} and len(finals) >= 10
    assert_same_cells(latest_finals(read_json(replayed, replayed.topics.vehicle_cells)), finals)
    assert _late(replayed) == _late(recorded)


def _record_the_demo_feeds(runs: Runs, recording: Path, logs: Path) -> Sent:
    """Both feeds published at once while the recorder records them and the connector forwards
    them into the recorded run's topics; what they sent."""
    settings = runs.recorded
    rows = list(
        SimulationPlan(lines=SAMPLE_ROWS, order="time", follow_clock=True, things=3).payloads()
    )
    vehicles = dataclasses.replace(VEHICLES, root=runs.root)
    positions = len(list(vehicles.messages()))  # one each: the simulation follows its seed
    sent = Sent(
        messages=len(rows) + positions,
        machine_records=sum(len(series) for series in expected_records(rows).values()),
        positions=positions,
    )
    recorder = RecorderProcess(
        settings, logs / "record.log", "--topic", f"{runs.root}/#", "--to", str(recording),
        "--client-id", runs.recorder_id, "--report-every", "0",
    )  # fmt: skip
    connector = ConnectorProcess(settings, logs / "connector.log", "--report-every", "0")
    try:
        connector.start()
        with ThreadPoolExecutor(2) as pool:
            published = [
                pool.submit(publish, settings, rows),
                pool.submit(run_vehicle_simulation, settings, vehicles, target="mqtt"),
            ]
            for future in published:
                future.result(120)
        landed = _wait_for_both(settings, sent)
        wait_for_messages(recording, sent.messages)
    finally:
        stopped = (connector.stop(), recorder.stop())
    assert stopped == (0, 0), (connector.output(), recorder.output())
    assert landed == (sent.machine_records, sent.positions)
    assert f"recorded {sent.messages:,} messages" in recorder.output()
    return sent


def _replay(settings: Settings, recording: Path, sent: Sent, logs: Path) -> None:
    """`statestream replay` of the recording (speed 0, no --shift-time) to the broker, forwarded
    by a second connector into the replayed run's topics."""
    connector = ConnectorProcess(settings, logs / "replay-connector.log", "--report-every", "0")
    connector.start()
    try:
        replay = run_cli(
            "replay", str(recording), "--speed", "0",
            env=settings_environment(settings), timeout_s=120,
        )  # fmt: skip
        assert replay.exit_code == 0, replay.stderr
        landed = _wait_for_both(settings, sent)
    finally:
        assert connector.stop() == 0, connector.output()
    assert f"replayed {sent.messages:,} messages" in replay.stdout
    assert landed == (sent.machine_records, sent.positions)


def _wait_for_both(settings: Settings, sent: Sent) -> tuple[int, int]:
    """Wait until the machine records and the positions are all in Kafka; how many are."""
    topics = settings.topics
    return (
        wait_for_records(settings, topics.machine_data, sent.machine_records),
        wait_for_records(settings, topics.vehicle_positions, sent.positions),
    )


def _run_join_and_geo(spark, settings: Settings, checkpoints: Path) -> dict[str, list[dict]]:
    """The join, then the geo query, each started as `run pipeline` starts it and run to the end
    (`--available-now`) on a checkpoint of its own in `checkpoints`; each one's batch figures."""
    figures: dict[str, list[dict]] = {}
    for name, max_offsets in (("join", None), ("geo", GEO_MAX_OFFSETS)):
        definition = query(name)
        options = RunOptions(
            available_now=True, max_offsets_per_trigger=max_offsets, checkpoint=checkpoints / name
        )
        [started] = start_queries(spark, settings, [definition], options)
        finished = started.awaitTermination(600)
        if not finished:
            started.stop()
        assert finished and started.exception() is None, (name, started.exception())
        figures[name] = [definition.batch_metrics(p) for p in started.recentProgress]
    return figures


def _sizes(batches: list[dict]) -> list[int]:
    """The records in of each batch that had any."""
    return [b["records_in"] for b in batches if b["records_in"]]


def _inputs(settings: Settings) -> dict[str, dict[int, list[tuple[bytes | None, Any]]]]:
    """Per input topic (machine records, positions) and partition: its (key, record) in log
    order, the records decoded (an envelope's ingestion time left out)."""
    topics, envelope = settings.topics, settings.ingest.envelope
    return {
        "machine": _partitions(settings, topics.machine_data, codec_for(envelope).decode),
        "vehicles": _partitions(
            settings, topics.vehicle_positions, vehicle_codec_for(envelope).decode
        ),
    }


def _partitions(
    settings: Settings, topic: str, decode: Callable[[bytes], tuple[Any, int | None]]
) -> dict[int, list[tuple[bytes | None, Any]]]:
    per_partition: dict[int, list[tuple[bytes | None, Any]]] = {}
    for partition, key, value in read_records(settings, topic):
        record, _ = decode(value)
        per_partition.setdefault(partition, []).append((key, record))
    return per_partition


def _pairs(settings: Settings) -> Counter[tuple]:
    """The join's pairs as a multiset of (thing, quantity, time, result, left, right)."""
    return Counter(
        (
            pair["thing"],
            pair["quantity"],
            pair["phenomenonTime"],
            pair["result"],
            tuple(pair["left"].values()),
            tuple(pair["right"].values()),
        )
        for pair in read_json(settings, settings.topics.machine_out)
    )


def _late(settings: Settings) -> Counter[tuple]:
    """The late records of both queries as a multiset of (stage, thing, quantity, time)."""
    return Counter(
        (record["stage"], record["thing"], record["quantity"], record["phenomenonTime"])
        for record in read_json(settings, settings.topics.late)
    )
