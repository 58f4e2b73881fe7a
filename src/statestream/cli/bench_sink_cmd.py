"""`statestream bench sink`: points per second into InfluxDB (added to the `bench` group)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._bench import AsJson, benchmark, narrator, print_figures, run_on_spark
from statestream.cli._common import settings_from
from statestream.cli.bench_cmd import bench_app

TARGET_POINTS_PER_S = 50_000


def bench_sink(
    ctx: typer.Context,
    records: Annotated[
        int, typer.Option("--records", min=1000, help="Kafka records (values) in the input.")
    ] = 1_000_000,
    partitions: Annotated[
        int, typer.Option("--partitions", min=1, help="Partitions of each input topic.")
    ] = 4,
    max_offsets_per_trigger: Annotated[
        int | None,
        typer.Option(
            "--max-offsets-per-trigger",
            min=1,
            help="Records per batch (default: influx_sink.max_offsets_per_trigger).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Points per second into InfluxDB: the writer alone, then the Spark sink query.

    The real sample cloned into many machines, plus a joined pair per torque record, as the JSON
    values they are on Kafka. 1: turned into points and written by the InfluxDB writer. 2: the
    same values preloaded into fresh topics and written by the sink query (availableNow), points
    counted back from InfluxDB. Target: ≥ 50,000 points/s sustained (the query's batches after
    the first, which carries the JVM's warm-up). Needs the services running; its topics,
    database and checkpoint are removed at the end.
    """
    module = benchmark("sink_bench")
    settings = settings_from(ctx)
    say = narrator(as_json)
    options = module.SinkBenchOptions(
        records=records, partitions=partitions, max_offsets_per_trigger=max_offsets_per_trigger
    )
    figures = run_on_spark(
        settings,
        "statestream-bench-sink",
        as_json,
        lambda spark: module.run(spark, settings, options, say),
    )
    figures["target_points_per_s"] = TARGET_POINTS_PER_S
    print_figures(figures, as_json, lambda: _table(figures))


def _table(f: dict) -> Table:
    table = Table(
        title=f"statestream bench sink ({f['records']:,} records → {f['points']:,} points)"
    )
    table.add_column("step")
    table.add_column("points/s", justify="right")
    table.add_column("detail")
    table.add_row("writer: JSON → points", f"{f['convert_points_per_s']:,}", "PointBuilder")
    table.add_row(
        "writer: points → InfluxDB",
        f"{f['write_points_per_s']:,}",
        f"{f['write_requests']:,} requests of ≤ {f['points_per_request']:,} points",
    )
    table.add_row("writer: both", f"{f['writer_points_per_s']:,}", "")
    met = "met" if f["points_per_s"] >= f["target_points_per_s"] else "NOT met"
    table.add_row(
        "query: sustained",
        f"[bold]{f['points_per_s']:,}[/]",
        f"batches after the first; target {f['target_points_per_s']:,} {met}",
    )
    table.add_row(
        "query: all batches",
        f"{f['all_batches_points_per_s']:,}",
        f"{f['query_batches']} batches of ≤ {f['max_offsets_per_trigger']:,} records, "
        f"{f['query_batch_seconds']} s; the first {f['first_batch_points_per_s']:,} points/s",
    )
    table.add_row(
        "query: time in batches",
        "",
        f"summed over the tasks: conversion {f['query_convert_s']} s, "
        f"InfluxDB writes {f['query_write_s']} s",
    )
    table.add_row(
        "query: whole run",
        f"{f['query_wall_points_per_s']:,}",
        f"{f['query_wall_s']} s with the query's start; "
        f"{f['query_points_in_influxdb']:,} points counted in InfluxDB",
    )
    table.caption = (
        f"{f['cpus']} CPUs, load average {f['load_average_1m']} at the end "
        f"(other work on the machine slows every figure)"
    )
    return table


def register(app: typer.Typer) -> None:
    """Add `sink` to the `bench` group, which `bench_cmd` registers on `app`."""
    bench_app.command("sink")(bench_sink)
