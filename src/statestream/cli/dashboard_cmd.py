"""`statestream dashboard`: serve the live web dashboard."""

from __future__ import annotations

from typing import Annotated

import typer

from statestream.cli._common import console, settings_from


def dashboard(
    ctx: typer.Context,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Address to listen on (default: settings dashboard.host, localhost). Anything "
            "but localhost/127.0.0.1 needs a token (STATESTREAM_DASHBOARD__TOKEN).",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Port (default: dashboard.port, 8050)."),
    ] = None,
) -> None:
    """Serve the live dashboard: per thing, charts of speed, torque and power, power levels, duty
    cycle against the 40 % limit, alerts and pipeline health; /fleet, every machine's power, duty
    cycle and alert state; /vehicles, the map of vehicle cells and bunching alerts.

    Live data comes from the Kafka topics (machine.data, machine.out, analytics.machine.stats,
    analytics.machine.alerts, analytics.vehicle.cells and analytics.vehicle.alerts,
    read_committed) over a websocket; a page that opens first loads the recent history from
    InfluxDB. The map draws its cells over the simulator's routes, stops and places, with no
    request to another server; map tiles only when dashboard.tile_url is set. Read-only.
    With a token set (dashboard.token), every request must carry it: open
    http://HOST:PORT/?token=TOKEN. Runs until Ctrl-C.
    """
    from statestream.dashboard import run_dashboard

    settings = settings_from(ctx)
    changes = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if changes:
        section = settings.dashboard.model_copy(update=changes)
        settings = settings.model_copy(update={"dashboard": section})

    def ready(url: str) -> None:
        console.print(f"dashboard at [bold]{url}[/]; Ctrl-C stops it", highlight=False)
        if settings.dashboard.token is not None:
            console.print(f"a token is set: open {url}?token=<dashboard.token>", highlight=False)

    run_dashboard(settings, on_ready=ready)
    console.print("dashboard stopped")


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)
