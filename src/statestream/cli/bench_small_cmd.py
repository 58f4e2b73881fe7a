"""`statestream bench small`: the joins on a small DataFrame against a groupBy of it (added to
`bench`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from statestream.cli._bench import AsJson, benchmark, narrator, print_figures, run_on_spark
from statestream.cli._common import settings_from
from statestream.cli.bench_cmd import bench_app

_LABELS = {
    "complement_join": "complement_join",
    "asof_join": "asof_join",
    "groupby": "groupBy(thing).count()",
    "python_udf": "the same count in applyInPandas",
}


def bench_small(
    ctx: typer.Context,
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat", min=1, help="Timed runs of each query, after one warm-up run each."
        ),
    ] = 5,
    as_json: AsJson = False,
) -> None:
    """What complement_join and asof_join cost on a small DataFrame, against a groupBy of it.

    The bundled sample as narrow records, as the library example builds them, cached before any
    clock starts; complement_join(records, [SpecTemplate()]), asof_join of its actSpeed_C11 and
    vaTorque_C11 records by thing (the README's library example), and as baselines
    groupBy("thing").count() and the same count in a Python UDF (applyInPandas), each into the
    noop sink after one warm-up, --repeat times in turn: median and fastest seconds, and each
    join's median ÷ each baseline's. The session has Spark's default shuffle partitions and
    adaptive execution, as a user's session has them. Needs no services.
    """
    module = benchmark("small_bench")
    settings = settings_from(ctx)
    say = narrator(as_json)
    options = module.SmallBenchOptions(repeat=repeat)
    figures = run_on_spark(
        settings, "statestream-bench-small", as_json, lambda spark: module.run(spark, options, say)
    )
    print_figures(figures, as_json, lambda: _table(figures), min_width=110)


def _table(f: dict[str, Any]) -> Table:
    adaptive = "on" if f["adaptive"] else "off"
    table = Table(
        title=f"statestream bench small ({f['records']:,} records, {f['things']} things, "
        f"{f['shuffle_partitions']} shuffle partitions, adaptive execution {adaptive})"
    )
    table.add_column("query", no_wrap=True)
    for column in ("median s", "fastest s", "÷ groupBy", "÷ Python UDF", "rows", "partitions"):
        table.add_column(column, justify="right")
    for name, label in _LABELS.items():
        table.add_row(
            label,
            f"[bold]{f[f'{name}_s']:.3f}[/]",
            f"{f[f'{name}_min_s']:.3f}",
            _ratio(f, name, "groupby"),
            _ratio(f, name, "python_udf"),
            f"{f[f'{name}_rows']:,}",
            f"{f[f'{name}_partitions']:,}",
        )
    table.caption = (
        f"medians of {f['repeat']} runs each, after a warm-up; ÷: the query's median ÷ the "
        "baseline's (1: as cheap); partitions: its last stage's, after adaptive execution; "
        f"Spark {f['spark_version']}, {f['cpus']} CPUs, load average {f['load_average_1m']} "
        "(other work on the machine slows every figure)"
    )
    return table


def _ratio(f: dict[str, Any], name: str, baseline: str) -> str:
    """`name`'s median ÷ `baseline`'s as the figures have it; one for the baseline itself."""
    if name == baseline:
        return "1×"
    found = f.get(f"{name}_to_{baseline}")
    return f"{found}×" if found is not None else "–"


def register(app: typer.Typer) -> None:
    """Add `small` to the `bench` group, which `bench_cmd` registers on `app`."""
    bench_app.command("small")(bench_small)
