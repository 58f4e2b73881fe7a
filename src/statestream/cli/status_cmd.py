"""`statestream status`: the streaming queries running on this machine and their figures."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Annotated

import typer
from rich.table import Table

from statestream.cli._common import console, settings_from

COLUMNS = (
    "query",
    "state",
    "pid",
    "batch",
    "rows in",
    "rows/s",
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
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query.")] = False,
) -> None:
    """List the running streaming queries (join, stats, sinks …) with their last batch's figures.

    Each query started by statestream on this machine reports here: its last batch (records in,
    rate, duration, state rows and bytes), its own counters (pairs, late, duplicates, malformed,
    summed over the run) and the event-time lag. A query whose process died shows as `gone`.
    """
    from statestream.jobs.status import read_statuses, status_folder

    statuses = read_statuses(status_folder(settings_from(ctx)), include_finished)
    if as_json:
        for item in statuses:
            console.print_json(json.dumps(asdict(item)))
        return
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
    for s in statuses:
        table.add_row(
            s.name,
            s.state + (f": {s.error}" if s.error else ""),
            str(s.pid),
            "–" if s.batch is None else str(s.batch),
            f"{s.input_rows:,}",
            _rate(s.processed_rows_per_s),
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
