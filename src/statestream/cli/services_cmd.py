"""`statestream services up | down | status`: Kafka, Mosquitto, InfluxDB and a Spark cluster."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from
from statestream.services import ServiceStatus, service_statuses, start_services, stop_services

services_app = typer.Typer(
    help=(
        "Run the local services (Kafka, Mosquitto, InfluxDB; a Spark standalone master and "
        "workers with STATESTREAM_SERVICES__SPARK_WORKERS=N; three Kafka brokers with "
        "STATESTREAM_SERVICES__KAFKA_BROKERS=3) as plain processes under the data folder. "
        "Kafka takes SASL/SCRAM logins only: one user per component, passwords generated into "
        "the data folder's secrets.json. Services whose settings point at another machine are "
        "left alone."
    ),
    no_args_is_help=True,
)

_STATE_STYLES = {
    "started": "green",
    "running": "green",
    "stopped": "yellow",
    "not running": "dim",
    "unhealthy": "red",
    "external": "cyan",
}


@services_app.command("up")
def up(ctx: typer.Context) -> None:
    """Start the services that are not running yet and wait until each answers."""
    settings = settings_from(ctx)
    console.print(_table(start_services(settings), "services up", settings.paths.data_dir))


@services_app.command("down")
def down(ctx: typer.Context) -> None:
    """Stop the services statestream started from this data folder (and only those)."""
    settings = settings_from(ctx)
    console.print(_table(stop_services(settings), "services down", settings.paths.data_dir))


@services_app.command("status")
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(
        False,
        "--json",
        help="One JSON object per process: service, role, pid, port, state, log, address, "
        "answers, detail.",
    ),
) -> None:
    """Show each process's health, pid, address and log file (one row per broker and worker).

    Exit code 0 when every service answers, 3 when one is stopped, unhealthy or unreachable.
    """
    settings = settings_from(ctx)
    statuses = service_statuses(settings)
    if as_json:
        print(json.dumps([s.to_json() for s in statuses], indent=2))
    else:
        console.print(_table(statuses, "services status", settings.paths.data_dir))
    if not all(s.answers for s in statuses):
        raise typer.Exit(3)


def _table(statuses: list[ServiceStatus], title: str, data_dir: Path) -> Table:
    table = Table(title=f"{title} — data folder {data_dir}", title_justify="left")
    for column in ("service", "state", "pid"):
        table.add_column(column, no_wrap=True)
    for column in ("address", "log", "detail"):
        table.add_column(column, overflow="fold")
    for s in statuses:
        style = _STATE_STYLES.get(s.state, "")
        table.add_row(
            s.name,
            f"[{style}]{s.state}[/]" if style else s.state,
            str(s.pid or ""),
            s.address,
            _relative(s.log_file, data_dir),
            s.detail,
        )
    return table


def _relative(path: Path | None, data_dir: Path) -> str:
    if path is None:
        return ""
    return str(path.relative_to(data_dir)) if path.is_relative_to(data_dir) else str(path)


def register(app: typer.Typer) -> None:
    app.add_typer(services_app, name="services")
