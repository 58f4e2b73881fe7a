"""`statestream report log-size`: bytes per record of JSON and protobuf for the same data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, err_console, settings_from
from statestream.ingest import SAMPLE_FILE, file_lines
from statestream.services.log_size import (
    COMPRESSIONS,
    encoded_sizes,
    measure_kafka_logs,
    records_of,
)

report_app = typer.Typer(help="Reports: figures about statestream's data.", no_args_is_help=True)

LABELS = {"none": "plain record JSON", "json": "JSON envelope", "protobuf": "protobuf envelope"}


@report_app.command("log-size")
def log_size(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="JSON-lines file of wide rows (default: the bundled sample).")
    ] = SAMPLE_FILE,
    kafka: Annotated[
        bool,
        typer.Option("--kafka/--no-kafka", help="Also measure Kafka's log (local broker)."),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Bytes per record of plain JSON, the JSON envelope and the protobuf envelope, for the
    records of FILE: the encoded key and value, and (--kafka) the bytes Kafka's log holds per
    record without compression and with lz4 and zstd, written to fresh one-partition topics.
    """
    lines = list(file_lines(file))
    records = records_of(lines)
    sizes = encoded_sizes(records)
    if kafka:
        say = (lambda text: None) if as_json else (lambda text: err_console.print(f"… {text}"))
        measure_kafka_logs(settings_from(ctx), lines, sizes, say)
    if as_json:
        print(json.dumps({"file": file.name, "encodings": [s.as_dict() for s in sizes]}))
        return
    table = Table(title=f"bytes per record, {len(records):,} records of {file.name}")
    table.add_column("encoding")
    table.add_column("key", justify="right")
    table.add_column("value", justify="right")
    compressions = COMPRESSIONS if kafka else ()
    for compression in compressions:
        table.add_column(f"Kafka log, {compression}", justify="right")
    for size in sizes:
        table.add_row(
            LABELS[size.envelope],
            f"{size.per_record(size.key_bytes)}",
            f"{size.per_record(size.value_bytes)}",
            *(f"{size.per_record(size.log_bytes[c])}" for c in compressions),
        )
    console.print(table)
    json_envelope, protobuf = sizes[1], sizes[2]
    console.print(
        f"protobuf / JSON envelope, value bytes: "
        f"{protobuf.value_bytes / json_envelope.value_bytes:.2f}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
