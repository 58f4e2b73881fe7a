"""`statestream chaos`: kill -9 the pipeline's parts at random moments under load, then check."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from statestream.cli._common import console, err_console, settings_from

if TYPE_CHECKING:
    from statestream.chaos import ChaosReport
    from statestream.chaos.vehicle_checks import VehicleChecks


class MqttSaves(enum.StrEnum):
    schedule = "schedule"
    every_change = "every-change"


def chaos(
    ctx: typer.Context,
    minutes: Annotated[
        float, typer.Option("--minutes", min=0.5, help="How long the kills go on.")
    ] = 20.0,
    seed: Annotated[
        int, typer.Option("--seed", help="Seeds the kill moments, order and down times.")
    ] = 0,
    rate: Annotated[
        float, typer.Option("--rate", min=0.1, help="Rows/s the simulator sends, all machines.")
    ] = 20.0,
    things: Annotated[
        int, typer.Option("--things", min=1, help="Machines the sample is cloned into.")
    ] = 6,
    vehicles: Annotated[
        int,
        typer.Option(
            "--vehicles",
            min=0,
            help="Also simulate this many buses and trams, one HFP position each a second, and "
            "run the vehicle queries (geo cells, bunching) in the pipeline; 0: machines only.",
        ),
    ] = 0,
    mqtt_saves: Annotated[
        MqttSaves,
        typer.Option(
            "--mqtt-saves",
            help="When Mosquitto saves its store during the run: on the settings' schedule "
            "(mqtt.save_after_changes; by default once a minute), or after every change "
            "(the smallest loss window, at a far lower rate; put back after the run).",
        ),
    ] = MqttSaves.schedule,
    kills: Annotated[
        int | None,
        typer.Option(
            "--kills",
            min=0,
            help="At most this many kills (default: the schedule's, about one every 25 s). "
            "0 makes the run a soak: memory, open files, state, checkpoints and lag must settle.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object instead of the table (the steps still go to stderr).",
        ),
    ] = False,
) -> None:
    """Run the whole pipeline under steady load and kill -9 its parts, then check the output.

    On the local services only (started if need be; they keep running afterwards, configured
    as before). The simulator publishes to Mosquitto at --rate; the connector (connect mqtt)
    and the Spark pipeline (run pipeline: every registered query of the machine use case) run
    as child processes. With --vehicles N a second simulator publishes N vehicles' HFP
    positions (a perfect feed: once, in order, with a fix) and the pipeline runs with
    --vehicles (geo cells and bunching too). For --minutes, at seeded random moments (about
    one kill every 25 s; a short run kills about once per component), it kills with -9, in
    turn, the connector, the pipeline, Mosquitto, InfluxDB, a Kafka broker (one of three with
    services.kafka_brokers = 3) and a Spark worker (one of them, with services.spark_workers >
    0), and starts each again after 0.5–5 s. Then it stops the load, lets everything through
    and checks: every published row's records on machine.data at least once, the pairs on
    machine.out exactly those of the offline join of machine.data, each once, the results of
    each query that declares a check (the statistics, the quantity statistics; with vehicles
    the geo cells and the bunching alerts, against the pure engines run over the positions
    topic at once) as their reference computes them, each once, and one InfluxDB point per
    pair; with vehicles also every published position on the positions topic at least once
    and one InfluxDB point per cell and window, with its latest (final) figures.

    Mosquitto acknowledges a message before it saves it: a kill -9 loses what it acknowledged
    since its last save and had not passed on yet. The run counts those rows (and vehicle
    positions, apart) per Mosquitto kill (its loss window, in the report) instead of failing on
    them; one lost at any other moment fails the run, and so does a simulator that did not hold
    95 % of its rate (--rate, or --vehicles positions a second).

    Each minute it samples the memory and open files of every part, the queries' state and
    Kafka lag and the checkpoints' size (printed at the end). With --kills 0 the run is a soak:
    over its last 40 minutes (the last two thirds of a shorter run) memory, open files, state
    (its rows; its files also by more than 1 MB) and checkpoints (the files of the batches Spark
    keeps, and how many batches they hold) may not grow by more than 10 %, the lag may not
    exceed 30 s of the load and no part may end on its own, or the run fails.

    The run has its own topics (chaos.RUN.*), InfluxDB database and checkpoints, removed when
    it passes, kept (and named) when it fails. Exit code 0 when nothing was lost outside
    Mosquitto's loss window and nothing doubled, 1 otherwise.
    """
    from statestream.chaos import ChaosOptions, run_chaos

    settings = settings_from(ctx)
    options = ChaosOptions(
        minutes=minutes,
        seed=seed,
        rate=rate,
        things=things,
        mqtt_saves=mqtt_saves.value,
        kills=kills,
        vehicles=vehicles,
    )
    shown = err_console if as_json else console  # stdout holds only the JSON then
    with shown.status("starting …") as status:
        report = run_chaos(settings, options, _say_on(shown), status.update)
    if as_json:
        print(json.dumps(report.to_json()))
    else:
        console.print(_table(report))
        if report.samples:
            console.print(_samples_table(report))
        for problem in report.problems:
            console.print(f"[bold red]problem:[/] {problem}", highlight=False, soft_wrap=True)
        verdict = "[green]passed[/]" if report.passed else "[bold red]FAILED[/]"
        console.print(f"chaos run {verdict}; workspace: {report.workspace}", soft_wrap=True)
    raise typer.Exit(0 if report.passed else 1)


def _say_on(shown: Console) -> Callable[[str], None]:
    def say(text: str) -> None:
        shown.print(text, highlight=False, markup=False, soft_wrap=True)

    return say


def _table(report: ChaosReport) -> Table:
    table = Table(title=f"chaos: {report.options.minutes:g} min, seed {report.options.seed}")
    table.add_column("component")
    for column in ("kills", "restarts", "exits", "failed starts"):
        table.add_column(column, justify="right")
    for name, counts in report.counts.items():
        failed = str(len(counts.failed_starts))
        table.add_row(name, str(counts.kills), str(counts.restarts), str(counts.exits), failed)
    table.add_section()
    table.add_row("total", str(report.kills), "", "", "")
    table.add_section()
    held = f"{report.rate_held:,.0f} of {report.options.rate:,.0f}"
    table.add_row("rows/s held", held, "", "", "")
    if report.options.vehicles:
        held = f"{report.vehicle_rate_held:,.0f} of {report.options.vehicles:,}"
        table.add_row("positions/s held", held, "", "", "")
    checks = report.checks
    if checks is not None:
        table.add_section()
        for name, value in checks.__dict__.items():
            if isinstance(value, int):
                table.add_row(name.replace("_", " "), f"{value:,}", "", "")
            elif isinstance(value, float):
                table.add_row(name.replace("_", " "), f"{value:,.3f}", "", "")
        for name, check in checks.queries.items():
            figures = ", ".join(f"{figure} {n:,}" for figure, n in check.__dict__.items())
            table.add_row(f"{name} results", figures, "", "")
        for component, seconds in checks.recovery_s.items():
            shown = ", ".join("–" if s is None else f"{s:.1f}" for s in seconds)
            table.add_row(f"{component} recovered in (s)", shown, "", "")
        for window in checks.mosquitto_windows:
            table.add_row(
                f"Mosquitto killed at {window.killed_at_s:.0f} s",
                f"{window.rows_lost:,} of {window.rows_acknowledged:,} unsaved rows lost",
                "",
                "",
            )
        if checks.vehicles is not None:
            _vehicle_rows(table, checks.vehicles)
    return table


def _vehicle_rows(table: Table, vehicles: VehicleChecks) -> None:
    """The vehicles' figures: positions, InfluxDB's cell points, Mosquitto's loss windows."""
    table.add_section()
    for name, value in vehicles.__dict__.items():
        if isinstance(value, int):
            table.add_row(name.replace("_", " "), f"{value:,}", "", "")
    figures = ", ".join(f"{figure} {n:,}" for figure, n in vehicles.cell_points.__dict__.items())
    table.add_row("cell points", figures, "", "")
    for window in vehicles.mosquitto_windows:
        table.add_row(
            f"Mosquitto killed at {window.killed_at_s:.0f} s",
            f"{window.rows_lost:,} of {window.rows_acknowledged:,} unsaved positions lost",
            "",
            "",
        )


def _samples_table(report: ChaosReport) -> Table:
    table = Table(title="each minute")
    parts = list(report.samples[-1].rss_mb)
    columns = ("s", *(f"{part} MB" for part in parts), "pipeline files", "state rows", "state MB")
    for column in (*columns, "checkpoints MB", "kept MB", "batches", "lag"):
        table.add_column(column, justify="right")
    for sample in report.samples:
        table.add_row(
            f"{sample.at_s:.0f}",
            *(f"{sample.rss_mb.get(part, 0.0):,.0f}" for part in parts),
            f"{sample.open_files.get('pipeline', 0):,}",
            f"{sample.state_rows:,}",
            f"{sample.state_bytes / 1e6:,.1f}",
            f"{sample.checkpoint_bytes / 1e6:,.1f}",
            f"{sample.checkpoint_window_bytes / 1e6:,.1f}",
            f"{sample.checkpoint_batches:,}",
            f"{sample.lag_records:,}",
        )
    return table


def register(app: typer.Typer) -> None:
    app.command("chaos")(chaos)
