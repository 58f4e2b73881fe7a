"""`statestream demo`: simulator, connector, Spark pipeline and dashboard, started as one."""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING, Annotated

import typer

from statestream.cli._common import console, settings_from

if TYPE_CHECKING:
    from statestream.config import Settings

REPORT_EVERY_S = 15.0


def demo(
    ctx: typer.Context,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            min=0.1,
            help="Rows/s the simulator sends, all machines (default: one row per machine and "
            "stats.sampling_interval_s, the time the statistics count for each record).",
        ),
    ] = None,
    things: Annotated[
        int, typer.Option("--things", min=1, help="Machines the sample is cloned into.")
    ] = 6,
    retime: Annotated[
        bool,
        typer.Option(
            "--retime/--no-retime",
            help="Event times follow the clock: each row is stamped with the time it is sent, "
            "so the live charts show now. --no-retime shifts the sample's own times to start "
            "now; sent at --rate, faster than recorded, they run ahead of the clock.",
        ),
    ] = True,
    vehicles: Annotated[
        bool,
        typer.Option(
            "--vehicles/--no-vehicles",
            help="Run the vehicle use case too: simulated HSL buses and trams (simulate "
            "vehicles) and the geo-cell and bunching queries (run geo's, in the pipeline) for "
            "the map.",
        ),
    ] = True,
    vehicle_count: Annotated[
        int,
        typer.Option("--vehicle-count", min=1, help="Buses and trams of the vehicle simulator."),
    ] = 50,
) -> None:
    """Run the whole pipeline on the local services and show it live in the browser.

    Starts the services and topics if needed, then the dashboard, the MQTT connector, the Spark
    pipeline (join, statistics, InfluxDB sink and, for the vehicles, the queries of run geo, in
    one application), the machine simulator, which replays the sample's machines with event
    times that follow the clock (--retime), and the simulated buses and trams (simulate vehicles;
    --no-vehicles leaves the vehicles out). Prints the dashboard's address and, every few
    seconds, what the queries have done. Ctrl-C, SIGTERM or SIGHUP stops everything cleanly,
    simulators first, and so does SIGINT (kill -INT) when the demo was started in the background
    (`statestream demo &`: it takes back the SIGINT a shell ignores there); if the demo itself is
    killed with -9, its parts stop themselves. Each part logs to
    `<data_dir>/logs/demo-<part>.log`.
    """
    from statestream.config import ensure_local_secrets
    from statestream.demo import Demo, DemoOptions, dashboard_address
    from statestream.services import start_services
    from statestream.services.topics import create_topics

    settings = ensure_local_secrets(settings_from(ctx))
    start_services(settings)
    create_topics(settings)
    runner = Demo(
        settings,
        DemoOptions(
            rate=rate, things=things, retime=retime, vehicles=vehicles, vehicle_count=vehicle_count
        ),
    )
    say = lambda text: console.print(text, highlight=False, markup=False, soft_wrap=True)  # noqa: E731
    _stop_on(signal.SIGTERM, signal.SIGHUP)
    try:
        runner.start(say)
        token = " (add ?token=<dashboard token>)" if settings.dashboard.token else ""
        console.print(f"\n[bold]dashboard: {dashboard_address(settings)}[/]{token}", soft_wrap=True)
        console.print("Ctrl-C stops the demo\n")
        while True:
            time.sleep(REPORT_EVERY_S)
            runner.raise_if_one_ended()
            say(_progress_line(settings, runner.pipeline_pid))
    except KeyboardInterrupt:
        console.print("stopping the demo …")
    finally:
        _stop_on()  # a second signal must not cut the orderly stop short
        runner.stop(say)
    console.print("demo stopped; the services keep running (`statestream services down`)")


def _stop_on(*signals: signal.Signals) -> None:
    """Make `signals` stop the demo as Ctrl-C does (a service manager's SIGTERM, a closed
    terminal's SIGHUP); with none, ignore SIGTERM and SIGHUP from now on."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt if signum in signals else signal.SIG_IGN)


def _progress_line(settings: Settings, pid: int | None) -> str:
    """What the demo's queries have done so far, from their status reports."""
    from statestream.jobs.status import read_statuses, status_folder
    from statestream.queries import REGISTRY

    shown = {query.name: query.demo_figures for query in REGISTRY}
    parts = []
    for status in read_statuses(status_folder(settings)):
        if status.pid != pid:
            continue
        figures = [f"{status.totals.get('input_rows', 0):,.0f} in"]
        for figure in shown.get(status.name, ()):
            if status.totals.get(figure.name):
                figures.append(f"{status.totals[figure.name]:,.0f} {figure.label}")
        parts.append(f"{status.name}: {', '.join(figures)}")
    return "; ".join(parts) or "no query has reported yet"


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
