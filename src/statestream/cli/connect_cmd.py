"""`statestream connect mqtt | file`: stream connectors that put machine rows and vehicle
positions on Kafka."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from statestream.cli._common import console, err_console, settings_from
from statestream.config import Settings
from statestream.errors import InputError
from statestream.ingest import (
    IngestCounts,
    IngestPipeline,
    MqttConnector,
    ReplayConnector,
    connector_pipeline,
    file_lines,
    machine_data_pipeline,
)
from statestream.ingest.connector_group import (
    MAX_INSTANCES,
    GroupOptions,
    default_share_group,
    run_connector_group,
)
from statestream.ingest.connector_instance import FIGURES_MARK

connect_app = typer.Typer(
    help="Stream connectors: receive machine rows and vehicle positions from a source, write "
    "records to Kafka.",
    no_args_is_help=True,
)


@connect_app.command("mqtt")
def connect_mqtt(
    ctx: typer.Context,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic",
            help="MQTT topic filter of the machine rows (default: mqtt.topic; not with "
            "ingest.processors set).",
        ),
    ] = None,
    client_id: Annotated[
        str | None,
        typer.Option("--client-id", help="Client id of the persistent session (ingest.client_id)."),
    ] = None,
    report_every: Annotated[
        float, typer.Option("--report-every", min=0, help="Seconds between figure lines (0: off).")
    ] = 10.0,
    instances: Annotated[
        int,
        typer.Option(
            "--instances",
            min=1,
            max=MAX_INSTANCES,
            help="Connector processes sharing the topic filters through an MQTT shared "
            "subscription, each message forwarded by one of them. Instance i's persistent "
            "session is CLIENT_ID-i, never the single connector's CLIENT_ID, so the two modes "
            "never share a session (1: one connector, no shared subscription). Fewer instances "
            "than the group had before is refused: see the ingest guide.",
        ),
    ] = 1,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            help="Share group of the instances (default: the client id); groups on several "
            "hosts join with the same --group and a --client-id per host. Implies the group "
            "mode, even with --instances 1.",
        ),
    ] = None,
    member_of: Annotated[
        str | None,
        typer.Option("--member-of", hidden=True, help="Run as one instance of this share group."),
    ] = None,
) -> None:
    """Subscribe to the topic filters of ingest.processors (QoS 1, persistent session) and write
    each message's records to Kafka until Ctrl-C or SIGTERM.

    The processor of a message is chosen by its MQTT topic: by default machine rows on
    mqtt.topic (machine/states) become records on machine.data, HSL HFP vehicle positions on
    /hfp/v2/journey/ongoing/vp/# records on input.vehicle.positions.

    Each message is acknowledged to the broker only once Kafka confirmed all its records, so a
    crash or kill means redelivery, never loss. Bad messages (bad JSON, no Thing or Timestamp,
    a value that is no number, a time that cannot be one, oversize) go to the dead-letter topic
    with the raw payload, the source topic and the reason; so do vehicle messages that are
    no HFP VP event, have a topic that does not parse, no time, no vehicle or coordinates out of
    range. The Kafka value is plain record JSON or the event envelope, as `ingest.envelope` says.

    With --instances N (or --group) it starts N such connectors as processes of their own in one
    MQTT shared subscription and watches them: one that ends is started again with its session
    (each restart printed), Ctrl-C or SIGTERM stops them all, and it exits non-zero when one
    keeps ending soon after its start. Records of one key may then reach Kafka out of order.
    """
    settings = _with_topic(settings_from(ctx), topic)
    if instances > 1 or group is not None:
        if member_of is not None:
            raise InputError("--member-of is one instance of a group: not with --instances")
        base_id = client_id or settings.ingest.client_id
        _connect_group(
            settings,
            GroupOptions(instances, group or default_share_group(base_id), base_id, report_every),
        )
        return
    pipeline = connector_pipeline(settings)
    stop = _stop_on_signals()

    def on_subscribed(session_present: bool) -> None:
        resumed = "session resumed" if session_present else "new session"
        routes = ", ".join(
            f"[bold]{route.topic_filter}[/] → [bold]{route.topic}[/] ({route.kind})"
            for route in pipeline.routes.routes
        )
        shared = f" in share group {member_of}" if member_of is not None else ""
        err_console.print(
            f"subscribed to {len(pipeline.topic_filters)} topic filters at "
            f"{settings.mqtt.host}:{settings.mqtt.port} as {connector.client_id}{shared} "
            f"({resumed}); "
            f"{routes}; envelope: {settings.ingest.envelope}, dead letters to "
            f"{pipeline.dead_letter_topic}",
            highlight=False,
            soft_wrap=True,
        )

    connector = MqttConnector(
        settings,
        topics=pipeline.topic_filters,
        client_id=client_id,
        on_subscribed=on_subscribed,
        share_group=member_of,
    )
    reporter = _Reporter(pipeline.counts, report_every, stop)
    reporter.start()
    started = time.monotonic()
    try:
        connector.run(pipeline, stop)
    finally:
        stop.set()
        reporter.join()
    console.print(_summary(pipeline, time.monotonic() - started, connector.reconnects))
    if member_of is not None:
        _figures_for_the_group(pipeline.counts)


def _figures_for_the_group(counts: IngestCounts) -> None:
    """An instance's last line: its counts, which the group's parent reads and adds up."""
    figures = {"events": counts.events, "records": counts.records}
    figures |= {"dead_letters": counts.dead_letters, "payload_bytes": counts.payload_bytes}
    print(FIGURES_MARK + json.dumps(figures), flush=True)


def _with_topic(settings: Settings, topic: str | None) -> Settings:
    """The settings with --topic as mqtt.topic (refused when ingest.processors is set)."""
    if topic is None:
        return settings
    if settings.ingest.processors is not None:
        raise InputError(
            "--topic sets mqtt.topic, the machine filter of the default processors; "
            "ingest.processors is set, so change the filter there"
        )
    return settings.model_copy(update={"mqtt": settings.mqtt.model_copy(update={"topic": topic})})


def _connect_group(settings: Settings, options: GroupOptions) -> None:
    """`connect mqtt --instances N`: the group until Ctrl-C or SIGTERM, then its summary."""
    report = run_connector_group(settings, options, _stop_on_signals(), _say)
    console.print(report.summary(), markup=False, highlight=False, soft_wrap=True)
    report.check_stopped_cleanly()


def _say(text: str) -> None:
    """A line of the group or of one of its instances (whose text is no markup), unwrapped."""
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


@connect_app.command("file")
def connect_file(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSON-lines file: one raw event per line.")],
) -> None:
    """Replay a file through the same processor as `connect mqtt`: each line is one raw event.

    Records go to machine.data, bad lines to the dead-letter topic (with their reason).
    """
    settings = settings_from(ctx)
    pipeline = machine_data_pipeline(settings)
    started = time.monotonic()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,} events"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(f"replaying {file.name}", total=None)
        connector = ReplayConnector(
            file_lines(file), file.name, lambda n: progress.update(task, completed=n)
        )
        connector.run(pipeline, threading.Event())
    console.print(_summary(pipeline, time.monotonic() - started, 0))


def _summary(pipeline: IngestPipeline, seconds: float, reconnects: int) -> str:
    counts = pipeline.counts
    rate = counts.events / seconds if seconds > 0 else 0.0
    rejected = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.rejected.items()))
    line = (
        f"{counts.events:,} events ({counts.payload_bytes / 1e6:,.1f} MB) → "
        f"{counts.records:,} records, {counts.dead_letters:,} dead letters"
        f"{f' ({rejected})' if rejected else ''} in {seconds:.1f} s ({rate:,.0f} events/s)"
    )
    for processor in pipeline.processors:
        line += "".join(f"; {note}" for note in processor.notes())
    return line + (f"; {reconnects} reconnects" if reconnects else "")


class _Reporter(threading.Thread):
    """Prints one line of figures every `every` seconds while the connector runs."""

    def __init__(self, counts: IngestCounts, every: float, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.counts, self.every, self.stop = counts, every, stop

    def run(self) -> None:
        if self.every <= 0:
            return
        last_events, last_time = 0, time.monotonic()
        while not self.stop.wait(self.every):
            now, events = time.monotonic(), self.counts.events
            rate = (events - last_events) / (now - last_time)
            err_console.print(
                f"{events:,} events, {self.counts.records:,} records, "
                f"{self.counts.dead_letters:,} dead letters; {rate:,.0f} events/s",
                highlight=False,
            )
            last_events, last_time = events, now


def _stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C or SIGTERM: the connector then flushes, acknowledges and stops."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


def register(app: typer.Typer) -> None:
    app.add_typer(connect_app, name="connect")
