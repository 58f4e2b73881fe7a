"""`statestream bench …`: benchmarks that print figures and ratios against a baseline.

The benchmarks live in the source checkout's benchmarks/ folder; they are not installed with the
package, so these commands run from a checkout (as `make setup` installs it).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._bench import (
    AsJson,
    benchmark,
    narrator,
    print_figures,
    record_results,
    run_on_spark,
)
from statestream.cli._common import settings_from
from statestream.cli._pipeline_table import pipeline_table
from statestream.spark.patches import freed_memory

bench_app = typer.Typer(
    help="Benchmarks: figures and ratios against a baseline run in the same process.",
    no_args_is_help=True,
)


@bench_app.callback()
def bench_group(
    ctx: typer.Context,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Also append the result, with its date, commit and machine, to "
            "benchmarks/results/BENCH.jsonl (the docs' benchmark page plots those files).",
        ),
    ] = False,
) -> None:
    """Benchmarks: figures and ratios against a baseline run in the same process."""
    record_results(ctx.invoked_subcommand if record else None)


@bench_app.command("join")
def bench_join(
    ctx: typer.Context,
    records: Annotated[
        int, typer.Option("--records", min=1000, help="Records per input for the engine.")
    ] = 1_000_000,
    baseline_records: Annotated[
        int,
        typer.Option(
            "--baseline-records", min=1000, help="Records per input for the per-record baseline."
        ),
    ] = 200_000,
    things: Annotated[
        int | None,
        typer.Option(
            "--things",
            min=1,
            help=(
                "Spread the real sample's records over N things (about records/N each, arriving "
                "in time order across things) and run only that input. --json then prints one "
                "flat object: things, records, pairs, seconds, records_per_s, joins_per_s, "
                "peak_state, baseline_records, baseline_joins_per_s, ratio and freed_memory "
                "(whether the freed_memory patch was on)."
            ),
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The join engine against a per-record pure-Python implementation of the same spec.

    Inputs: the spec's blocks of five (one thing), and the real sample data's speed ⋈ torque
    cloned into many things (or, with --things N, spread over N things). Prints records/s,
    joins/s (pairs/s), pairs, peak state (records held) and the engine/baseline ratio of joins/s.
    The engine runs as in Spark's Python workers: with the freed_memory patch where it applies
    (spark.patches; off: malloc's own thresholds).
    """
    module = benchmark("join_bench")
    say = narrator(as_json)
    kept = settings_from(ctx).spark.patches and freed_memory.install()
    say("malloc " + ("keeps freed memory (patch freed_memory)" if kept else "as it is"))
    baseline_records = min(baseline_records, records)
    if things is not None:
        figures = module.run_things(records, baseline_records, things, say)
        rows = [(f"sample, {figures['things']:,} things", figures)]
    else:
        figures = module.run(records, baseline_records, say)
        sample = figures["sample"]
        rows = [("blocks of 5", figures), (f"sample, {sample['things']} things", sample)]
    figures["freed_memory"] = kept
    print_figures(figures, as_json, lambda: _join_table(rows), min_width=110)


def _join_table(rows: list[tuple[str, dict]]) -> Table:
    table = Table(title="statestream bench join (M = million per second)")
    for column in (
        "input",
        "records",
        "pairs",
        "records/s",
        "joins/s",
        "peak state",
        "baseline joins/s",
        "ratio",
    ):
        table.add_column(column, justify="right" if column != "input" else "left")
    for label, row in rows:
        table.add_row(
            label,
            f"{row['records']:,}",
            f"{row['pairs']:,}",
            _millions(row["records_per_s"]),
            _millions(row["joins_per_s"]),
            f"{row['peak_state']:,}",
            _millions(row["baseline_joins_per_s"]),
            f"{row['ratio']}×",
        )
    return table


@bench_app.command("pipeline")
def bench_pipeline(
    ctx: typer.Context,
    records: Annotated[
        int, typer.Option("--records", min=1000, help="Records preloaded for the throughput run.")
    ] = 2_000_000,
    max_offsets_per_trigger: Annotated[
        int, typer.Option("--max-offsets-per-trigger", min=1, help="Records per micro-batch.")
    ] = 500_000,
    warmup_records: Annotated[
        int,
        typer.Option(
            "--warmup-records",
            min=0,
            help="Records of a warm-up run of the join (and of the pass-through) before "
            "measuring each.",
        ),
    ] = 100_000,
    warmup_streaming_seconds: Annotated[
        float,
        typer.Option(
            "--warmup-streaming-seconds",
            min=0,
            help="Length of a first latency run before the measured one (0: none).",
        ),
    ] = 10.0,
    rate: Annotated[
        float, typer.Option("--rate", min=1, help="Input records/s of the latency run.")
    ] = 10_000,
    latency_seconds: Annotated[
        float, typer.Option("--latency-seconds", min=1, help="Length of the latency run.")
    ] = 30,
    trigger_interval: Annotated[
        float | None,
        typer.Option("--trigger-interval", min=0, help="Seconds between batches (latency run)."),
    ] = None,
    burst_pairs: Annotated[
        int,
        typer.Option(
            "--burst-pairs",
            min=0,
            help="Pairs the burst part makes certain at once (0: no burst part).",
        ),
    ] = 250_000,
    baseline: Annotated[
        bool, typer.Option("--baseline/--no-baseline", help="Also run Spark's windowed join.")
    ] = True,
    baseline_records: Annotated[
        int,
        typer.Option(
            "--baseline-records", min=1000, help="Leading records the windowed join processes."
        ),
    ] = 200_000,
    baseline_range: Annotated[
        float, typer.Option("--baseline-range", min=0, help="± seconds of the windowed join.")
    ] = 1.0,
    passthrough: Annotated[
        bool,
        typer.Option(
            "--passthrough/--no-passthrough",
            help="Also pass the throughput input unchanged through the same sink (the limit "
            "beside the join: passthrough_records_per_s, join_to_passthrough).",
        ),
    ] = True,
    as_json: AsJson = False,
) -> None:
    """The streaming join end to end on the local Kafka and Spark: throughput, latency, baseline.

    1. The real sample scaled to --records records over many machines is preloaded into a fresh
       topic and joined (availableNow) by a new query, after a warm-up query over the first
       --warmup-records of them (as a running job is warm): records/s and pairs/s, and the
       pairs checked against the spec (missed, extra, duplicated). Then the limit beside it:
       a stateless query passes the same topic unchanged through the same exactly-once sink,
       after a warm-up of its own, timed the same way: passthrough_records_per_s, and
       join_to_passthrough, the join's records/s as a fraction of it (--no-passthrough skips it).
    2. After a first latency run of --warmup-streaming-seconds on topics of its own (a running
       job's small batches take code paths the availableNow queries leave cold; its p50 / p99
       are reported as cold_latency_*), records are produced at --rate records/s while the
       join runs: latency percentiles from
       the record that made a pair certain being sent to the pair being visible to a
       read_committed consumer (and, beside them, from the later of the pair's own records:
       a pair may have to wait for a later record, by the spec's meaning; and the most pairs
       made certain at once, when a paused series resumes, and how long until all of them were
       visible), the median, 99th-percentile and slowest batch and what a batch's time is made
       of, and the checkpoint's size on disk.
    3. A burst: a running join holds the speed records of 1,000 machines whose torque series
       paused, then one torque record per machine makes --burst-pairs pairs certain at once:
       the seconds from sending those records until a read_committed consumer saw every pair.
    4. Spark's stream-stream join (watermarks and a ±--baseline-range time range) on the first
       --baseline-records records of the same input (it is too slow for all of them): its
       records/s and the spec's pairs of those records it misses and adds.

    Also where it ran (spark_master, spark_workers: the local standalone cluster's workers when
    `services.spark_workers` > 0, else 0) and records/s per task core (task_cores: a local
    master's threads, or the local cluster's workers × spark_worker_cores), and the bytes each
    batch's tasks returned to the driver (Spark's own task metric resultSize): the tasks write
    the output themselves, so it stays small whatever the batch.
    Needs the services running (`statestream services up`); its topics are deleted at the end.
    """
    module = benchmark("pipeline_bench")
    options = module.PipelineBenchOptions(
        records=records,
        max_offsets_per_trigger=max_offsets_per_trigger,
        warmup_records=warmup_records,
        warmup_streaming_seconds=warmup_streaming_seconds,
        latency_rate=rate,
        latency_seconds=latency_seconds,
        trigger_interval_s=trigger_interval,
        burst_pairs=burst_pairs,
        baseline=baseline,
        baseline_records=baseline_records,
        baseline_range_s=baseline_range,
        passthrough=passthrough,
    )
    settings = settings_from(ctx)
    say = narrator(as_json)
    figures = run_on_spark(
        settings,
        "statestream-bench-pipeline",
        as_json,
        lambda spark: module.run(spark, settings, options, say),
    )
    print_figures(figures, as_json, lambda: pipeline_table(figures))


def _millions(per_second: float) -> str:
    return f"{per_second / 1e6:.2f} M"


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
