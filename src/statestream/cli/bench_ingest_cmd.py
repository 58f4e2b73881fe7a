"""`statestream bench ingest`: MQTT → connector → Kafka rows/s (added to the `bench` group)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, err_console, settings_from
from statestream.cli.bench_cmd import _benchmark, bench_app

TARGET_ROWS_PER_S = 20_000


def bench_ingest(
    ctx: typer.Context,
    rows: Annotated[
        int, typer.Option("--rows", min=1000, help="Rows (MQTT messages) to send.")
    ] = 200_000,
    qos: Annotated[int, typer.Option("--qos", min=0, max=1, help="MQTT QoS of the rows.")] = 1,
    envelope: Annotated[
        str | None,
        typer.Option("--envelope", help="none, json or protobuf (default: ingest.envelope)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Simulator → Mosquitto → connector → Kafka at full speed: rows/s and records/s end to end.

    The sample repeated to --rows rows is published one row per message while `statestream
    connect mqtt` runs as its own process; the clock stops when Kafka holds every record.
    Target: ≥ 20,000 rows/s. Needs the services running; uses fresh topics, removed at the end.
    """
    module = _benchmark("ingest_bench")
    if envelope is not None and envelope not in ("none", "json", "protobuf"):
        raise typer.BadParameter("none, json or protobuf", param_hint="--envelope")
    options = module.IngestBenchOptions(rows=rows, qos=qos, envelope=envelope)
    say = (lambda text: None) if as_json else (lambda text: err_console.print(f"… {text}"))
    figures = module.run(settings_from(ctx), options, say)
    if as_json:
        print(json.dumps(figures))
        return
    table = Table(title="statestream bench ingest", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    target = "✓" if figures["rows_per_s"] >= TARGET_ROWS_PER_S else "✗"
    for label, value in (
        ("rows (messages), QoS", f"{figures['rows']:,}, QoS {figures['qos']}"),
        ("records", f"{figures['records']:,}"),
        ("envelope", figures["envelope"]),
        ("seconds, first publish → last record in Kafka", f"{figures['seconds']}"),
        ("rows/s end to end", f"{figures['rows_per_s']:,} ({target} ≥ {TARGET_ROWS_PER_S:,})"),
        ("records/s end to end", f"{figures['records_per_s']:,}"),
        ("rows/s published", f"{figures['publish_rows_per_s']:,}"),
        ("connector CPU per row", f"{figures['connector_cpu_us_per_row']} µs"),
        (
            "load average before / after",
            f"{figures['load_average_before']} / {figures['load_average_after']} "
            f"({figures['cpus']} CPUs)",
        ),
    ):
        table.add_row(label, value)
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add `ingest` to the `bench` group, which `bench_cmd` registers on `app`."""
    bench_app.command("ingest")(bench_ingest)
