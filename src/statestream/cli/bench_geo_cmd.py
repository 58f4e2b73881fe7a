"""`statestream bench geo`: positions per second through the geo query (added to `bench`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._bench import AsJson, benchmark, narrator, print_figures, run_on_spark
from statestream.cli._common import settings_from
from statestream.cli.bench_cmd import bench_app

TARGET_POSITIONS_PER_S = 50_000


def bench_geo(
    ctx: typer.Context,
    positions: Annotated[
        int, typer.Option("--positions", min=1000, help="Positions preloaded for throughput.")
    ] = 1_000_000,
    vehicles: Annotated[
        int, typer.Option("--vehicles", min=1, help="Simulated vehicles (1 position/s each).")
    ] = 1_000,
    max_offsets_per_trigger: Annotated[
        int, typer.Option("--max-offsets-per-trigger", min=1, help="Positions per micro-batch.")
    ] = 250_000,
    rate: Annotated[
        float, typer.Option("--rate", min=1, help="Positions/s sent during the latency run.")
    ] = 2_000,
    latency_seconds: Annotated[
        float, typer.Option("--latency-seconds", min=1, help="Length of the latency run.")
    ] = 30,
    baseline: Annotated[
        bool,
        typer.Option("--baseline/--no-baseline", help="Also run Spark's window() + groupBy."),
    ] = True,
    warmup_positions: Annotated[
        int,
        typer.Option(
            "--warmup-positions", min=0, help="Positions of a warm-up query first (0: none)."
        ),
    ] = 50_000,
    as_json: AsJson = False,
) -> None:
    """The geo-cell query on the local Kafka and Spark: positions/s, latency, baseline ratio.

    Warm-up: a geo query of its own over --warmup-positions positions on topics of their own, so
    that the JVM and the Python workers are warm. Throughput: --positions simulated positions
    (the ingest codec of the settings' envelope) are preloaded into a fresh topic and the geo
    query runs over them (availableNow): positions_per_s over its batches. Latency: positions
    sent at --rate with event time = now while the query runs; latency_p50_s / latency_p99_s from
    a position's sending until a read_committed consumer sees a cell result that counts it.
    Baseline: Spark's own window() + groupBy aggregation (from_json, h3 in a pandas UDF,
    approximate distinct vehicles) over the same positions, its positions/s and the ratio (both
    after the first batch). Target: ≥ 50,000 positions/s. Needs the services running; its topics
    and checkpoints are removed at the end. Figures mean little on a busy machine (the load
    average is printed with them).
    """
    import os

    module = benchmark("geo_bench")
    settings = settings_from(ctx)
    say = narrator(as_json)
    options = module.GeoBenchOptions(
        positions=positions,
        vehicles=vehicles,
        max_offsets_per_trigger=max_offsets_per_trigger,
        rate=rate,
        latency_seconds=latency_seconds,
        baseline=baseline,
        warmup_positions=warmup_positions,
    )
    figures = run_on_spark(
        settings,
        "statestream-bench-geo",
        as_json,
        lambda spark: module.run(spark, settings, options, say),
    )
    figures["target_positions_per_s"] = TARGET_POSITIONS_PER_S
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    figures["cpus"] = os.cpu_count()
    print_figures(figures, as_json, lambda: _table(figures))


def _table(f: dict) -> Table:
    table = Table(title="statestream bench geo", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    met = "met" if f["positions_per_s"] >= f["target_positions_per_s"] else "NOT met"
    rows = [
        ("positions", f"{f['positions']:,} in {f['batches']} batches"),
        ("positions/s", f"{f['positions_per_s']:,} (target {f['target_positions_per_s']:,} {met})"),
        ("positions/s after the first batch", f"{f['sustained_positions_per_s'] or '–'}"),
        ("warm-up before", f"{f['warmup_positions']:,} positions in {f['warmup_seconds']} s"),
        ("cell results", f"{f['cell_results']:,}"),
        ("whole run with the query's start", f"{f['wall_seconds']} s"),
        ("baseline: window() + groupBy, positions/s", f"{f.get('baseline_positions_per_s', '–')}"),
        ("baseline after the first batch", f"{f.get('baseline_sustained_positions_per_s', '–')}"),
        ("ratio to the baseline (after the first batch)", f"{f.get('ratio_to_baseline', '–')}"),
        ("latency p50 / p99", f"{f['latency_p50_s']} s / {f['latency_p99_s']} s"),
        ("latency run", f"{f.get('latency_rate', '–')} positions/s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    table.caption = f"{f['cpus']} CPUs, load average {f['load_average_1m']} at the end"
    return table


def register(app: typer.Typer) -> None:
    """Add `geo` to the `bench` group, which `bench_cmd` registers on `app`."""
    bench_app.command("geo")(bench_geo)
