"""`statestream record mqtt`: record a live MQTT feed to files, one line per message."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import console, err_console, settings_from

if TYPE_CHECKING:
    from statestream.ingest.recording import MqttRecorder, RecordingWriter

record_app = typer.Typer(
    help="Record a live feed to files, to replay it later with its own timing "
    "(`statestream replay`).",
    no_args_is_help=True,
)


@record_app.command("mqtt")
def record_mqtt(
    ctx: typer.Context,
    topics: Annotated[
        list[str],
        typer.Option(
            "--topic",
            "-t",
            help="MQTT topic filter to record (`+` one level, `#` the rest); give it again for "
            "more, e.g. --topic '/hfp/v2/journey/ongoing/vp/#' --topic machine/states.",
        ),
    ],
    to: Annotated[
        Path,
        typer.Option(
            "--to",
            help="The recording's name, e.g. recordings/hfp.log: written as its parts "
            "hfp.00001.log, hfp.00002.log … (a new run goes on after the last part).",
        ),
    ],
    rotate_mb: Annotated[
        float,
        typer.Option("--rotate-mb", min=0, help="Start a new part after this many MB (0: never)."),
    ] = 256.0,
    rotate_minutes: Annotated[
        float,
        typer.Option(
            "--rotate-minutes", min=0, help="Start a new part after this many minutes (0: never)."
        ),
    ] = 0.0,
    compress: Annotated[
        bool,
        typer.Option("--compress/--no-compress", help="Gzip each part once it is closed."),
    ] = True,
    client_id: Annotated[
        str | None,
        typer.Option(
            "--client-id",
            help="Client id of the persistent session (default: one per recording path, so a "
            "recorder started again resumes its session and misses nothing).",
        ),
    ] = None,
    report_every: Annotated[
        float,
        typer.Option("--report-every", min=0, help="Seconds between progress lines (0: off)."),
    ] = 10.0,
) -> None:
    """Subscribe to topic filters on the MQTT broker of the settings (mqtt.host, port, TLS,
    login; QoS 1, persistent session) and write every message as one line
    `<receive time> <topic> <payload>`, HSL's HFP dump format, until Ctrl-C or SIGTERM.

    The receive time is UTC with microseconds; the payload is kept byte for byte (as base64,
    marked `base64:`, when it is not one line of UTF-8 text). Each message is acknowledged to the
    broker only once its line is on disk, so a crash means redelivery, never loss. Closed parts
    are gzipped. Prints a progress line (messages, MB, messages/s) every --report-every seconds.
    """
    from statestream.ingest.recording import (
        MqttRecorder,
        RecordingWriter,
        Rotation,
        recorder_client_id,
    )

    settings = settings_from(ctx)
    rotation = Rotation(
        max_bytes=round(rotate_mb * 1e6) or None,
        max_seconds=rotate_minutes * 60 or None,
        compress=compress,
    )
    writer = RecordingWriter(to, rotation)
    stop = _stop_on_signals()

    def on_subscribed(session_present: bool) -> None:
        resumed = "session resumed" if session_present else "new session"
        err_console.print(
            f"subscribed to {', '.join(topics)} at {settings.mqtt.client_address} as "
            f"{recorder.client_id} ({resumed}); recording to "
            f"{to.parent}/{to.stem}.NNNNN{to.suffix}",
            highlight=False,
            soft_wrap=True,
        )

    recorder = MqttRecorder(
        settings,
        topics,
        writer,
        client_id=client_id or recorder_client_id(to),
        on_subscribed=on_subscribed,
    )
    reporter = threading.Thread(target=_report, args=(recorder, report_every, stop), daemon=True)
    reporter.start()
    started = time.monotonic()
    try:
        recorder.run(stop)
    finally:
        stop.set()
        writer.close()
    summary = _summary(recorder, writer, time.monotonic() - started)
    console.print(summary, highlight=False, soft_wrap=True)


def _summary(recorder: MqttRecorder, writer: RecordingWriter, seconds: float) -> str:
    counts = recorder.counts
    rate = counts.messages / seconds if seconds > 0 else 0.0
    parts = [_final_name(part) for part in writer.parts]
    line = (
        f"recorded {counts.messages:,} messages ({counts.payload_bytes / 1e6:,.1f} MB of "
        f"payload) in {seconds:.1f} s ({rate:,.0f} messages/s) to {len(parts)} "
        f"part{'' if len(parts) == 1 else 's'}{': ' if parts else ''}{', '.join(parts)}"
    )
    if counts.unrecordable:
        line += f"; {counts.unrecordable:,} messages whose topic no line can hold, dropped"
    return line + (f"; {counts.reconnects} reconnects" if counts.reconnects else "")


def _final_name(part: Path) -> str:
    """A part's name as it is now: gzipped (`.gz`) once closed, unless compression was off."""
    gzipped = part.with_name(part.name + ".gz")
    return str(gzipped if gzipped.exists() and not part.exists() else part)


def _report(recorder: MqttRecorder, every: float, stop: threading.Event) -> None:
    """One line of figures every `every` seconds while the recorder runs."""
    if every <= 0:
        return
    counts = recorder.counts
    last_messages, last_time = 0, time.monotonic()
    while not stop.wait(every):
        now, messages = time.monotonic(), counts.messages
        rate = (messages - last_messages) / (now - last_time)
        current = recorder.writer.current
        err_console.print(
            f"{messages:,} messages, {recorder.writer.line_bytes / 1e6:,.1f} MB written; "
            f"{rate:,.0f} messages/s{f'; writing {current}' if current else ''}",
            highlight=False,
        )
        last_messages, last_time = messages, now


def _stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C or SIGTERM: the recorder then waits for the disk, acknowledges
    and stops."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


def register(app: typer.Typer) -> None:
    app.add_typer(record_app, name="record")
