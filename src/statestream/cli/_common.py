"""The root Typer app, the global `--config` option and the consoles every command shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from statestream.config import Settings, load_settings

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="statestream",
    help=(
        "Stateful, high-throughput stream processing of machine data on Apache Spark.\n\n"
        "Settings come from STATESTREAM_* environment variables (e.g. "
        "STATESTREAM_KAFKA__BOOTSTRAP_SERVERS) and an optional TOML file given with --config."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="TOML settings file (sections kafka, mqtt, …)."),
    ] = None,
) -> None:
    ctx.obj = {"config_file": config}


def settings_from(ctx: typer.Context) -> Settings:
    """The settings for this invocation, built once from environment, --config file and defaults."""
    root = ctx.find_root()
    state = root.obj if isinstance(root.obj, dict) else {}
    if "settings" not in state:
        state["settings"] = load_settings(state.get("config_file"))
        root.obj = state
    return state["settings"]


@contextmanager
def rate_progress(
    description: str, unit: str, *columns: ProgressColumn, total: int | None = None
) -> Iterator[Callable[[int], None]]:
    """A transient progress display on stderr: `description`, `columns`, the rate and the time.

    Yields the callback that reports how many `unit`s are done so far; the rate shows as
    "N unit/s" once time has passed.

        with rate_progress("sample → mqtt", "rows", BarColumn(), total=100) as on_progress:
            run(on_progress=on_progress)
    """
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        *columns,
        TextColumn("[cyan]{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total, rate="")

        def on_progress(done: int) -> None:
            elapsed = progress.tasks[task].elapsed or 0.0
            speed = f"{done / elapsed:,.0f} {unit}/s" if elapsed > 0 else ""
            progress.update(task, completed=done, rate=speed)

        yield on_progress
