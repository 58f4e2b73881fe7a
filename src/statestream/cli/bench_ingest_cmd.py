"""`statestream bench ingest`: MQTT → connector → Kafka rows/s (added to the `bench` group)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._bench import AsJson, benchmark, narrator, recorded
from statestream.cli._common import console, settings_from
from statestream.cli.bench_cmd import bench_app
from statestream.ingest.connector_group import MAX_INSTANCES

TARGET_ROWS_PER_S = 20_000


def bench_ingest(
    ctx: typer.Context,
    rows: Annotated[
        int, typer.Option("--rows", min=1000, help="Rows (MQTT messages) to send.")
    ] = 200_000,
    qos: Annotated[int, typer.Option("--qos", min=0, max=1, help="MQTT QoS of the rows.")] = 1,
    envelope: Annotated[
        str | None,
        typer.Option("--envelope", help="none, json or protobuf (default: ingest.envelope)."),
    ] = None,
    client: Annotated[
        str,
        typer.Option(
            "--client",
            help="The connector's MQTT client: statestream (its own), paho (paho-mqtt), or both "
            "in turn with the ratio.",
        ),
    ] = "both",
    instances: Annotated[
        str,
        typer.Option(
            "--instances",
            help="Connector processes, comma-separated for a run with each count (e.g. 1,2): "
            "`connect mqtt --instances N`, N connectors in one MQTT shared subscription. The "
            "paho-mqtt run of --client both is made with the first count only.",
        ),
    ] = "1",
    as_json: AsJson = False,
) -> None:
    """Simulator → Mosquitto → connector → Kafka at full speed: rows/s and records/s end to end.

    The sample repeated to --rows rows is published one row per message while `statestream
    connect mqtt` runs as its own process; the clock stops when Kafka holds every record.
    With --client both (the default) the run is made with statestream's MQTT client and then
    with paho-mqtt in the connector, and the ratio printed. With --instances 1,2 the run is made
    with one connector and with two in a shared subscription, rows/s printed for each. Target:
    ≥ 20,000 rows/s. Needs the services running; uses fresh topics, removed at the end.
    """
    module = benchmark("ingest_bench")
    if envelope is not None and envelope not in ("none", "json", "protobuf"):
        raise typer.BadParameter("none, json or protobuf", param_hint="--envelope")
    if client not in ("statestream", "paho", "both"):
        raise typer.BadParameter("statestream, paho or both", param_hint="--client")
    counts = instance_counts(instances)
    clients = ["statestream", "paho"] if client == "both" else [client]
    plan = [(clients[0], count) for count in counts] + [(name, counts[0]) for name in clients[1:]]
    say = narrator(as_json)
    runs = {}
    for name, count in plan:
        say(
            f"connector with the {name} MQTT client" + (f", {count} instances" if count > 1 else "")
        )
        options = module.IngestBenchOptions(
            rows=rows, qos=qos, envelope=envelope, client=name, instances=count
        )
        runs[name, count] = module.run(settings_from(ctx), options, say)
    figures = combined_figures(runs, clients, counts)
    recorded(figures)
    if as_json:
        print(json.dumps(figures))
        return
    table = Table(title="statestream bench ingest", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    target = "✓" if figures["rows_per_s"] >= TARGET_ROWS_PER_S else "✗"
    for label, value in (
        ("rows (messages), QoS", f"{figures['rows']:,}, QoS {figures['qos']}"),
        ("records", f"{figures['records']:,}"),
        (
            "envelope, connector's MQTT client",
            f"{figures['envelope']}, {figures['client']}" + (" over TLS" if figures["tls"] else ""),
        ),
        ("connector processes (instances)", f"{figures['instances']}"),
        ("seconds, first publish → last record in Kafka", f"{figures['seconds']}"),
        ("rows/s end to end", f"{figures['rows_per_s']:,} ({target} ≥ {TARGET_ROWS_PER_S:,})"),
        ("records/s end to end", f"{figures['records_per_s']:,}"),
        ("rows/s published", f"{figures['publish_rows_per_s']:,}"),
        ("connector CPU per row", f"{figures['connector_cpu_us_per_row']} µs"),
        (
            "load average before / after",
            f"{figures['load_average_before']} / {figures['load_average_after']} "
            f"({figures['cpus']} CPUs)",
        ),
        *_paho_rows(figures),
        *_instances_rows(figures),
    ):
        table.add_row(label, value)
    console.print(table)


def instance_counts(text: str) -> list[int]:
    """The connector counts of --instances: "1,2" → [1, 2]; `BadParameter` unless each is a
    whole number from 1 to `MAX_INSTANCES`, once.

    >>> instance_counts("1, 2")
    [1, 2]
    """
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    valid = all(1 <= n <= MAX_INSTANCES for n in counts)
    if not counts or len(set(counts)) != len(counts) or not valid:
        raise typer.BadParameter(
            f"connector counts from 1 to {MAX_INSTANCES}, comma-separated, each once (e.g. 1,2), "
            f"not {text!r}",
            param_hint="--instances",
        )
    return counts


def combined_figures(
    runs: dict[tuple[str, int], dict], clients: list[str], counts: list[int]
) -> dict:
    """One run's figures with the others': the first client with the first count at the top,
    paho-mqtt's run (`paho`, with the ratios) and each further count (`instances_<N>`) nested."""
    figures = dict(runs[clients[0], counts[0]])
    if len(clients) == 2:
        paho = runs["paho", counts[0]]
        figures |= {
            "paho": paho,
            "ratio_to_paho": round(figures["rows_per_s"] / paho["rows_per_s"], 2),
            "paho_cpu_ratio": round(
                paho["connector_cpu_us_per_row"] / max(figures["connector_cpu_us_per_row"], 0.1),
                2,
            ),
        }
    for count in counts[1:]:
        figures[f"instances_{count}"] = runs[clients[0], count]
    return figures


def _instances_rows(figures: dict) -> list[tuple[str, str]]:
    """The rows/s of the runs with further connector counts."""
    rows = []
    for name, run in figures.items():
        if name.startswith("instances_") and isinstance(run, dict):
            rows += [
                (f"{run['instances']} instances: rows/s end to end", f"{run['rows_per_s']:,}"),
                (
                    f"{run['instances']} instances: connector CPU per row",
                    f"{run['connector_cpu_us_per_row']} µs",
                ),
            ]
    return rows


def _paho_rows(figures: dict) -> list[tuple[str, str]]:
    """The paho run's rows of the table, when both clients were run."""
    paho = figures.get("paho")
    if paho is None:
        return []
    return [
        ("paho-mqtt: rows/s end to end", f"{paho['rows_per_s']:,}"),
        ("paho-mqtt: connector CPU per row", f"{paho['connector_cpu_us_per_row']} µs"),
        ("statestream's client ÷ paho-mqtt, rows/s", f"{figures['ratio_to_paho']}×"),
        ("paho-mqtt ÷ statestream's client, CPU per row", f"{figures['paho_cpu_ratio']}×"),
    ]


def register(app: typer.Typer) -> None:
    """Add `ingest` to the `bench` group, which `bench_cmd` registers on `app`."""
    bench_app.command("ingest")(bench_ingest)
