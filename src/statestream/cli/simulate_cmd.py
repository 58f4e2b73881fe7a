"""`statestream simulate [machines]`: replay real machine rows to MQTT (or straight to Kafka)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn

from statestream.cli._common import console, rate_progress, settings_from
from statestream.errors import InputError
from statestream.ingest import SAMPLE_FILE, SimulationPlan, SimulationResult, run_simulation
from statestream.ingest.replay import file_lines


class SimulationTarget(enum.StrEnum):
    mqtt = "mqtt"
    kafka = "kafka"


class RowOrder(enum.StrEnum):
    file = "file"
    time = "time"


def simulate(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(help="JSON-lines file of wide machine rows (default: the bundled sample)."),
    ] = SAMPLE_FILE,
    to: Annotated[
        SimulationTarget,
        typer.Option("--to", help="mqtt: publish to mqtt.topic; kafka: records to machine.data."),
    ] = SimulationTarget.mqtt,
    rate: Annotated[
        str, typer.Option("--rate", help="Rows per second, or max.", metavar="ROWS_PER_S|max")
    ] = "max",
    order: Annotated[
        RowOrder, typer.Option("--order", help="file: as in the file; time: by Timestamp.")
    ] = RowOrder.file,
    retime: Annotated[
        bool,
        typer.Option("--retime", help="Shift event times so the replay starts now."),
    ] = False,
    follow_clock: Annotated[
        bool,
        typer.Option(
            "--follow-clock",
            help="Stamp each row with the time it is sent: event time stays at now whatever "
            "--rate is (--retime alone runs ahead when rows are sent faster than recorded).",
        ),
    ] = False,
    loop: Annotated[
        str,
        typer.Option(
            "--loop",
            help="Passes over the file, or forever; each pass is shifted by the file's span.",
            metavar="N|forever",
        ),
    ] = "1",
    things: Annotated[
        int | None,
        typer.Option(
            "--things", min=1, help="Clone the machines into N machines (shifted, jittered)."
        ),
    ] = None,
    qos: Annotated[int, typer.Option("--qos", min=0, max=2, help="MQTT QoS 0, 1 or 2.")] = 1,
    topic: Annotated[
        str | None,
        typer.Option("--topic", help="MQTT topic or Kafka topic (default: from the settings)."),
    ] = None,
) -> None:
    """Replay machine rows as machines would send them: one row per MQTT message on
    machine/states over one persistent connection, or with --to kafka straight through the
    connector's processor to machine.data.

    Prints a progress bar with the achieved rate and a summary at the end.
    """
    settings = settings_from(ctx)
    plan = SimulationPlan(
        lines=list(file_lines(file)),
        order=order.value,
        retime=retime,
        follow_clock=follow_clock,
        loops=_loops(loop),
        things=things,
    )
    total = plan.rows_per_pass * plan.loops if plan.loops is not None else None
    columns = (BarColumn(), MofNCompleteColumn(), TaskProgressColumn())
    with rate_progress(f"{file.name} → {to.value}", "rows", *columns, total=total) as on_progress:
        result = run_simulation(
            settings,
            plan,
            target=to.value,
            rate=_rate(rate),
            qos=qos,
            topic=topic,
            on_progress=on_progress,
        )
    console.print(_summary(result, qos))


def _summary(result: SimulationResult, qos: int) -> str:
    line = (
        f"sent [bold]{result.rows:,}[/] rows ({result.payload_bytes / 1e6:,.1f} MB) to "
        f"[bold]{result.destination}[/] in {result.seconds:.1f} s: "
        f"[bold]{result.rows_per_s:,.0f}[/] rows/s"
    )
    return line + delivery_summary(result, qos)


def delivery_summary(result: SimulationResult, qos: int) -> str:
    """The end of a simulation's summary line: what Kafka made of it, or the MQTT QoS."""
    if result.counts is not None:
        counts = result.counts
        return f"; {counts.records:,} records, {counts.dead_letters:,} dead letters"
    return f" (MQTT QoS {qos})"


def _rate(text: str) -> float | None:
    if text.strip().lower() == "max":
        return None
    try:
        rate = float(text)
    except ValueError:
        raise InputError(f"--rate takes rows per second or max, not {text!r}") from None
    if rate <= 0:
        raise InputError(f"--rate must be positive, not {text}")
    return rate


def _loops(text: str) -> int | None:
    if text.strip().lower() == "forever":
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--loop takes a number of passes (1 or more) or forever, not {text!r}")
    return int(text)
