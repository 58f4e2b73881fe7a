"""The root Typer app, the global `--config` option and the consoles every command shares."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from statestream.config import Settings, load_settings

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
