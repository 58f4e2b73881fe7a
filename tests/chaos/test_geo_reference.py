"""The chaos run's check of the geo cells (`queries.geo.verify`), without Kafka or Spark: the
pure engine run over every position at once against the same engine run batch by batch under a
moving watermark, as the query runs it, on small hand-made positions."""

from __future__ import annotations

import json
from collections import Counter

from statestream.exactly_once.read import Record
from statestream.geo import BatchWatermark, CellWindows, GeoSpec, Positions, cell_records
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.queries.geo.decoding import decode_positions
from statestream.queries.geo.verify import cells_check, late_positions, reference_finals
from tests.chaos.feed import simulated_records

BASE_MS = 1_764_051_300_000  # a whole minute
SPEC = GeoSpec(resolution=8, window_ms=60_000, disorder_ms=5_000, allowed_lateness_ms=60_000)
CODEC = vehicle_codec_for("none")


def _record(veh: int, t_s: float, lat: float | None = 60.1699, speed: float = 5.0) -> Record:
    long = None if lat is None else 24.9384 + veh * 0.02  # each vehicle in a cell of its own
    position = VehiclePosition(22, veh, BASE_MS + round(t_s * 1000), "bus", "1052", 1, "52",
                               lat, long, speed, 120, -5, 1000, 0, 0, None, "08:15",
                               "2025-11-25")  # fmt: skip
    return (veh % 3, position.key.encode(), CODEC.encode(position, 0))


def _streamed(batches: list[list[Record]]) -> list[bytes]:
    """The cells topic of the query: each batch under the watermark of the ones before, then
    the closing batch without data."""
    windows, watermark = CellWindows(SPEC), BatchWatermark(SPEC.disorder_ms)
    written: list[bytes] = []
    for batch in [*batches, []]:
        columns = decode_positions([value for _, _, value in batch], "none", SPEC.resolution)
        placed = columns["cell"] != 0
        positions = Positions(
            *(columns[c][placed] for c in ("t", "cell", "vehicle", "speed", "delay"))
        )
        step = windows.process(positions, watermark.value)
        written += [v.encode() for v in cell_records(step.results, SPEC.resolution)[1]]
        watermark.after(columns["t"])
    return written


DRIVE = [_record(1, 10), _record(2, 20), _record(1, 30, lat=None), _record(1, 70), _record(2, 95),
         _record(1, 100), _record(2, 130)]  # fmt: skip


def test_the_reference_makes_final_the_windows_the_last_watermark_closed() -> None:
    want = reference_finals(DRIVE, Counter(), SPEC, "none")
    # watermark 130 − 5 s: the windows of 0–60 s and 60–120 s are final, 120–180 s still open
    assert sorted({start - BASE_MS for _, start in want}) == [0, 60_000]
    assert sorted(figures[1] for figures in want.values()) == [1, 1, 1, 2]  # vehicle 1 at 70, 100
    assert all(figures[0] == 1 and figures[2] == 5.0 for figures in want.values())


def test_the_stream_cut_in_batches_equals_the_reference_and_passes() -> None:
    written = _streamed([DRIVE[:2], DRIVE[2:5], DRIVE[5:]])
    assert any(not json.loads(v)["final"] for v in written)  # early results, not compared
    check = cells_check(DRIVE, Counter(), written, SPEC, "none")
    assert check.passed and check.expected == 4


def test_a_position_counted_twice_by_the_query_is_one_its_topic_holds_twice() -> None:
    doubled = [*DRIVE[:4], DRIVE[3], *DRIVE[4:]]  # the connector wrote the one at 70 s twice
    written = _streamed([doubled[:3], doubled[3:]])
    assert cells_check(doubled, Counter(), written, SPEC, "none").passed
    assert not cells_check(DRIVE, Counter(), written, SPEC, "none").passed  # wrong: 2 positions


def test_missing_wrong_and_repeated_results_fail() -> None:
    written = _streamed([DRIVE])
    finals = [v for v in written if json.loads(v)["final"]]
    check = cells_check(DRIVE, Counter(), [v for v in written if v != finals[0]], SPEC, "none")
    assert (check.missing, check.passed) == (1, False)
    changed = json.loads(finals[1]) | {"positions": 9}
    check = cells_check(DRIVE, Counter(), [*written, json.dumps(changed).encode()], SPEC, "none")
    assert (check.wrong, check.duplicated) == (1, 0)
    check = cells_check(DRIVE, Counter(), [*written, finals[1]], SPEC, "none")
    assert (check.duplicated, check.wrong, check.passed) == (1, 0, False)


def test_a_position_the_query_found_late_is_left_out_of_the_reference() -> None:
    late = _record(1, 40)  # arrives when the watermark is 165 s: its window 0–60 s is gone
    written = _streamed([DRIVE, [_record(2, 170)], [late]])
    positions = [*DRIVE, _record(2, 170), late]
    late_topic = [
        (0, b"22/1", json.dumps({"stage": "geo", "source_topic": "positions", "thing": "22/1",
                                 "phenomenonTime": float(BASE_MS + 40_000)}).encode()),
        (0, b"x", json.dumps({"stage": "join", "source_topic": "data", "thing": "22/1",
                              "phenomenonTime": float(BASE_MS + 40_000)}).encode()),
    ]  # fmt: skip
    skipped = late_positions(late_topic, "positions")
    assert skipped == Counter({("22/1", float(BASE_MS + 40_000)): 1})
    assert cells_check(positions, skipped, written, SPEC, "none").passed
    assert cells_check(positions, Counter(), written, SPEC, "none").wrong == 1


def test_no_positions_no_cells() -> None:
    assert reference_finals([], Counter(), SPEC, "none") == {}
    assert cells_check([], Counter(), [], SPEC, "none").passed


def test_the_simulators_feed_streamed_in_batches_passes() -> None:
    records = simulated_records(vehicles=16, seconds=180, seed=3)
    written = _streamed([records[i : i + 137] for i in range(0, len(records), 137)])
    check = cells_check(records, Counter(), written, SPEC, "none")
    assert check.passed and check.expected > 10
