"""`statestream replay`: send a recording again with its own timing, to MQTT or Kafka."""

from __future__ import annotations

import enum
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import TextColumn

from statestream.cli._common import console, err_console, rate_progress, settings_from

if TYPE_CHECKING:
    from statestream.ingest.recording import ReplayPlan, ReplayResult


class ReplayTarget(enum.StrEnum):
    mqtt = "mqtt"
    kafka = "kafka"


def replay(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Recordings (plain or .gz), replayed one after the other; a recording's name "
            "(recordings/hfp.log) stands for all its parts.",
            show_default=False,
        ),
    ],
    to: Annotated[
        ReplayTarget,
        typer.Option(
            "--to",
            help="mqtt: publish each message on its recorded topic; kafka: straight through the "
            "connector's processors (routed by topic, as `connect mqtt` routes them) to Kafka.",
        ),
    ] = ReplayTarget.mqtt,
    speed: Annotated[
        float,
        typer.Option(
            "--speed",
            min=0,
            help="Multiplier of the recording's pace (2: its gaps halved; 0: no gaps at all).",
        ),
    ] = 1.0,
    loop: Annotated[
        bool,
        typer.Option(
            "--loop",
            help="Start again after the end, until Ctrl-C; each pass's event times move on by "
            "the recording's length, so no pass repeats another's.",
        ),
    ] = False,
    shift_time: Annotated[
        bool,
        typer.Option(
            "--shift-time",
            help="Move the event times (HFP tst/tsi, machine Timestamp) so that the first "
            "message's is now; the others keep their distance to it.",
        ),
    ] = False,
    copies: Annotated[
        int,
        typer.Option(
            "--copies",
            min=1,
            help="Replays side by side, each in its own process, each with its vehicles (HFP "
            "operator id + 10000 × copy) or machines (Thing-copyN) renamed; copy 0 is the "
            "original.",
        ),
    ] = 1,
    topic_root: Annotated[
        str,
        typer.Option(
            "--topic-root", help="Put before every topic (replay + /hfp/v2/… → replay/hfp/v2/…)."
        ),
    ] = "",
    qos: Annotated[int, typer.Option("--qos", min=0, max=2, help="MQTT QoS 0, 1 or 2.")] = 1,
    max_lag: Annotated[
        float,
        typer.Option(
            "--max-lag",
            min=0,
            help="Fail when the p99 lag behind the recording's clock is more seconds than this.",
        ),
    ] = 1.0,
) -> None:
    """Replay recordings of `statestream record` (or HSL's HFP dumps, the same format) with
    their original spacing, scaled by --speed: to MQTT (QoS 1 by default), or through the
    processors straight to Kafka.

    Prints the rate held against the rate asked (the recording's own × speed) and the lag
    behind the recording's clock (p50, p99, max of how late each message left); fails when the
    p99 lag exceeds --max-lag. Ctrl-C or SIGTERM stops it cleanly.
    """
    from statestream.ingest.recording import ReplayPlan, run_replay

    settings = settings_from(ctx)
    plan = ReplayPlan(
        files=tuple(files),
        target=to.value,
        speed=speed,
        loop=loop,
        shift_time=shift_time,
        copies=copies,
        topic_root=topic_root,
        qos=qos,
    )
    stop = _stop_on_signals()
    sent = TextColumn("{task.completed:,} messages")
    described = f"{', '.join(f.name for f in files)} → {to.value}"
    if copies > 1:
        described += f" ({copies} copies)"
    with rate_progress(described, "messages", sent) as on_progress:
        result = run_replay(settings, plan, stop=stop, on_progress=on_progress)
    console.print(_summary(plan, result), highlight=False, soft_wrap=True)
    if not stop.is_set():
        result.pace.check(max_lag, speed)


def _summary(plan: ReplayPlan, result: ReplayResult) -> str:
    pace = result.pace
    line = (
        f"replayed {pace.messages:,} messages ({result.payload_bytes / 1e6:,.1f} MB) to "
        f"{plan.target} in {result.seconds:.1f} s: {pace.describe(plan.speed)}"
    )
    if result.records is not None:
        line += f"; {result.records:,} records, {result.dead_letters:,} dead letters"
    if result.unadjusted:
        line += f"; {result.unadjusted:,} payloads of no known kind left as they were"
    if result.cut_short:
        line += f"; {result.cut_short:,} last lines not whole, skipped"
    return line


def _stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C or SIGTERM: the replay then sends no more, drains and stops."""
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        if not stop.is_set():
            err_console.print("stopping the replay …")
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    return stop


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
