"""`statestream config show`: the effective settings."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from statestream.cli._common import console, settings_from

config_app = typer.Typer(help="Inspect the effective settings.", no_args_is_help=True)


@config_app.command("show")
def show(
    ctx: typer.Context,
    reveal: Annotated[bool, typer.Option("--reveal", help="Print secrets in clear.")] = False,
) -> None:
    """Print the effective settings as JSON (secrets masked unless --reveal)."""
    settings = settings_from(ctx)
    console.print_json(json.dumps(settings.to_json_dict(reveal=reveal)))


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
