"""`statestream status`: the streaming queries running on this machine and their figures."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from
from statestream.jobs.lag import LAG_TIMEOUT_S

COLUMNS = (
    "query",
    "state",
    "pid",
    "batch",
    "rows in",
    "rows/s",
    "kafka lag",
    "totals",
    "state store",
    "batch time",
    "event-time lag",
    "updated",
)


def status(
    ctx: typer.Context,
    include_finished: Annotated[
        bool, typer.Option("--all", help="Also list runs that stopped, failed or died.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help='One JSON object per query; its "lag" is {"total": n, "topics": {topic: '
            "{partition: n}}}, or null when unknown.",
        ),
    ] = False,
    lag_timeout: Annotated[
        float,
        typer.Option(
            "--lag-timeout",
            min=0,
            help="Seconds to wait for the topics' end offsets from Kafka; without an answer the "
            "Kafka lag shows as unknown (–). 0: do not ask Kafka.",
        ),
    ] = LAG_TIMEOUT_S,
) -> None:
    """List the running streaming queries (join, stats, sinks …) with their last batch's figures.

    Each query started by statestream on this machine reports here: its last batch (records in,
    rate, duration, state rows and bytes), its Kafka lag (records between the offsets it has
    committed and the ends of the topics it reads), its own counters (pairs, late, duplicates,
    malformed, summed over the run) and the event-time lag. A query whose process died shows as
    `gone`.
    """
    from statestream.jobs.status import statuses_and_lags

    settings = settings_from(ctx)
    if as_json:
        for item, lag in statuses_and_lags(settings, include_finished, lag_timeout):
            record = {**asdict(item), "lag": lag.as_json() if lag is not None else None}
            console.print_json(json.dumps(record))
        return
    with console.status("reading the queries' status and Kafka's end offsets …"):
        statuses = statuses_and_lags(settings, include_finished, lag_timeout)
    if not statuses:
        console.print(
            "no streaming query is running"
            + ("" if include_finished else " (--all shows finished runs)")
        )
        return
    table = Table(title="streaming queries")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    now = time.time()
    labels = _figure_labels()
    for s, lag in statuses:
        table.add_row(
            s.name,
            s.state + (f": {s.error}" if s.error else ""),
            str(s.pid),
            "–" if s.batch is None else str(s.batch),
            f"{s.input_rows:,}",
            _rate(s.processed_rows_per_s),
            "–" if lag is None else f"{lag.total:,}",
            ", ".join(f"{labels.get((s.name, k), k)} {v:,.0f}" for k, v in s.totals.items()),
            _state(s.state_rows, s.state_bytes),
            "–" if s.duration_s is None else f"{s.duration_s:.2f} s",
            _lag(s.metrics.get("max_event_time_ms"), s.updated),
            f"{now - s.updated:.0f} s ago",
        )
    console.print(table)


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _state(rows: int | None, size: int | None) -> str:
    if rows is None:
        return "–"
    return f"{rows:,} rows, {(size or 0) / 1e6:,.1f} MB"


def _lag(max_event_time_ms: float | None, updated: float) -> str:
    return "–" if not max_event_time_ms else f"{updated - max_event_time_ms / 1000:,.1f} s"


def _figure_labels() -> dict[tuple[str, str], str]:
    """(query, figure) → the figure's label, as the queries declare them."""
    from statestream.queries import REGISTRY

    return {(q.name, f.name): f.label for q in REGISTRY for f in q.figures}


def register(app: typer.Typer) -> None:
    app.command("status")(status)
