"""`statestream chaos` refuses services on another machine with one line, before touching any,
and shows each minute's sample."""

from __future__ import annotations

import pytest
from rich.console import Console

from statestream.chaos.checkpoints import CheckpointSize
from statestream.chaos.report import ChaosOptions, ChaosReport
from statestream.chaos.soak import Sample
from statestream.cli.chaos_cmd import _samples_table
from tests.support import run_cli


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("STATESTREAM_KAFKA__BOOTSTRAP_SERVERS", "kafka.example.com:9092", "kafka"),
        ("STATESTREAM_MQTT__HOST", "mqtt.example.com", "mqtt"),
        ("STATESTREAM_INFLUX__URL", "http://influx.example.com:8086", "influx"),
    ],
)
def test_external_services_are_refused(variable: str, value: str, named: str) -> None:
    done = run_cli("chaos", "--minutes", "1", env={variable: value})
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "local services" in lines[0], done.stderr


def test_the_samples_table_shows_the_state_and_the_checkpoints_as_the_soak_reads_them() -> None:
    sizes = {
        "join": CheckpointSize(bytes=7_500_000, window_bytes=6_100_000, batches=143),
        "geo": CheckpointSize(bytes=900_000, window_bytes=700_000, batches=120),
    }
    sample = Sample(
        60.0, {"pipeline": 3_200.0}, 246_460, 8_400_000, 0, {"pipeline": 640}, sizes, 812
    )
    report = ChaosReport(ChaosOptions(kills=0), samples=[sample])
    console = Console(width=200, record=True)
    console.print(_samples_table(report))
    shown = console.export_text()
    header, row = (line for line in shown.splitlines() if "pipeline" in line or "3,200" in line)
    for column in ("state rows", "state MB", "checkpoints MB", "kept MB", "batches"):
        assert column in header
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells == ["60", "3,200", "640", "812", "0.2", "8.4", "6.8", "143", "0"]
