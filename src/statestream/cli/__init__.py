"""The `statestream` command line: parses, calls one function, prints.

Each command group lives in its own module and is registered here. Errors that a user can act on
(`StatestreamError`) are printed as one line on stderr with exit code 2, never as a stack trace.
"""

from __future__ import annotations

import sys

import typer

from statestream.cli import (
    bench_asof_cmd,
    bench_cmd,
    bench_geo_cmd,
    bench_ingest_cmd,
    bench_sink_cmd,
    bench_small_cmd,
    bench_spark_cmd,
    chaos_cmd,
    config_cmd,
    connect_cmd,
    dashboard_cmd,
    demo_cmd,
    ingest_cmd,
    join_cmd,
    pipeline_cmd,
    record_cmd,
    replay_cmd,
    report_cmd,
    run_cmd,
    services_cmd,
    simulate_vehicles_cmd,
    status_cmd,
    topics_cmd,
)
from statestream.cli._common import app, err_console
from statestream.demo import stop_when_demo_ends, take_back_ctrl_c
from statestream.errors import StatestreamError

config_cmd.register(app)
join_cmd.register(app)
bench_cmd.register(app)
bench_geo_cmd.register(app)
bench_ingest_cmd.register(app)
bench_sink_cmd.register(app)
bench_spark_cmd.register(app)
bench_asof_cmd.register(app)
bench_small_cmd.register(app)
services_cmd.register(app)
topics_cmd.register(app)
ingest_cmd.register(app)
simulate_vehicles_cmd.register(app)  # the `simulate` group, machines and vehicles
connect_cmd.register(app)
report_cmd.register(app)
record_cmd.register(app)
replay_cmd.register(app)
run_cmd.register(app)
pipeline_cmd.register(app)
status_cmd.register(app)
dashboard_cmd.register(app)
demo_cmd.register(app)
chaos_cmd.register(app)


def main() -> None:
    """Console-script entry point (and `python -m statestream`'s).

    `kill -INT` stops a command as Ctrl-C does, also one that a shell started in the background
    with SIGINT ignored (`statestream demo &` in a script): it takes SIGINT back first.
    """
    take_back_ctrl_c()
    stop_when_demo_ends()  # only in a part of `statestream demo`
    try:
        app()
    except StatestreamError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


__all__ = ["app", "main", "typer"]
