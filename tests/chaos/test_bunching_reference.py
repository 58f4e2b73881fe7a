"""The chaos run's check of the bunching alerts (`queries.bunching.verify`), without Kafka or
Spark: the pure engine given every position at once against the same engine given them batch by
batch per line, as the query does, on two vehicles that drive close together."""

from __future__ import annotations

from statestream.exactly_once.read import Record
from statestream.geo.bunching import BunchingSpec, LineBunching
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
from statestream.jobs.vehicle_decoding import decode_vehicle_rows
from statestream.queries.bunching.rows import alert_value, process_frame
from statestream.queries.bunching.verify import alerts_check, kafka_rows, reference_alerts
from tests.chaos.feed import simulated_records

BASE_MS = 1_764_051_300_000
SPEC = BunchingSpec(distance_m=150.0, duration_ms=60_000.0, max_skew_ms=5_000.0)
CODEC = vehicle_codec_for("none")


def _record(veh: int, t_s: float, route: str = "1052", long: float = 24.94) -> Record:
    position = VehiclePosition(22, veh, BASE_MS + round(t_s * 1000), "bus", route, 1, "52",
                               60.17, long + veh * 0.0005, 8.0, 120, 0, 1000, 0, 0, None,
                               "08:15", "2025-11-25")  # fmt: skip
    return (veh % 2, position.key.encode(), CODEC.encode(position, 0))


# two buses 28 m apart for 80 s (one alert after 60 s), and a third alone on another route
DRIVE = [
    record
    for second in range(80)
    for record in (_record(1, second), _record(2, second + 0.5), _record(3, second, "1040"))
]


def _streamed(records: list[Record], batch: int, spec: BunchingSpec = SPEC) -> list[bytes]:
    """The alerts topic of the query: `batch` records at a time, each line's in Kafka order."""
    lines: dict[str, LineBunching] = {}
    written: list[bytes] = []
    for start in range(0, len(records), batch):
        decoded, _ = decode_vehicle_rows(kafka_rows(records[start : start + batch]), "none")
        for key, line in decoded.groupby("line", sort=True):
            state = lines.setdefault(str(key), LineBunching(spec))
            step = process_frame(state, line)
            route, direction = str(line["route"].iloc[0]), int(line["direction"].iloc[0])
            written += [alert_value(a, route, direction).encode() for a in step.alerts]
    return written


def test_the_reference_raises_one_alert_for_the_pair() -> None:
    [alert] = reference_alerts(DRIVE, SPEC, "none")
    assert '"vehicles":["22/1","22/2"]' in alert and '"route":"1052"' in alert


def test_the_alerts_streamed_in_batches_equal_the_reference() -> None:
    for batch in (7, 30, len(DRIVE)):
        check = alerts_check(DRIVE, _streamed(DRIVE, batch), SPEC, "none")
        assert check.passed and check.expected == 1, batch


def test_a_position_written_twice_changes_nothing() -> None:
    doubled = [*DRIVE[:90], *DRIVE[60:]]  # the connector wrote 30 records again after a kill
    assert alerts_check(doubled, _streamed(DRIVE, 25), SPEC, "none").passed


def test_missing_repeated_and_unexpected_alerts_fail() -> None:
    [alert] = _streamed(DRIVE, 30)
    assert alerts_check(DRIVE, [], SPEC, "none").missing == 1
    check = alerts_check(DRIVE, [alert, alert], SPEC, "none")
    assert (check.duplicated, check.passed) == (1, False)
    other = alert.replace(b'"episode_start":', b'"episode_start":1')
    check = alerts_check(DRIVE, [alert, other], SPEC, "none")
    assert (check.unexpected, check.passed) == (1, False)
    moved = alert.replace(b'"distance_m":', b'"distance_m":9')
    assert alerts_check(DRIVE, [moved], SPEC, "none").wrong == 1


def test_the_simulators_feed_streamed_in_batches_passes() -> None:
    short = BunchingSpec(distance_m=150.0, duration_ms=10_000.0, max_skew_ms=5_000.0)
    records = simulated_records(vehicles=16, seconds=180, seed=3)  # two pairs start bunched
    check = alerts_check(records, _streamed(records, 211, short), short, "none")
    assert check.passed and check.expected > 0
