"""The docs keep up with the code: the reference pages name every command and every setting, every
page is in mkdocs.yml's nav, and the README stays a front page. No services needed."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
import yaml
from pydantic import BaseModel

from statestream.cli import app
from statestream.config import ENV_NESTED_DELIMITER, ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX_LINES = 250


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every command group and command under `command`, as the words after `statestream`."""
    for name, sub in getattr(command, "commands", {}).items():
        yield " ".join((*path, name))
        yield from _command_paths(sub, (*path, name))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field holds: itself, or the items of a list or dict of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _nav_pages(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


def test_the_cli_reference_names_every_command() -> None:
    page = (DOCS / "reference" / "cli.md").read_text()
    paths = list(_command_paths(typer.main.get_command(app)))
    assert {"run", "run join", "services up"} <= set(paths)  # the walk reaches groups and commands
    missing = [path for path in paths if f"`statestream {path}`" not in page]
    assert not missing, f"docs/reference/cli.md does not name: {missing}"


def test_the_settings_reference_names_every_section_and_field() -> None:
    page = (DOCS / "reference" / "settings.md").read_text()
    missing = []
    for section, section_field in Settings.model_fields.items():
        if f"## `{section}`" not in page:
            missing.append(f"section {section}")
        [model] = _models_in(section_field.annotation)
        for name, field in model.model_fields.items():
            variable = f"{ENV_PREFIX}{section}{ENV_NESTED_DELIMITER}{name}".upper()
            if f"`{variable}`" not in page:
                missing.append(f"{section}.{name} ({variable})")
            for item_model in _models_in(field.annotation):  # e.g. each spec of join.specs
                missing += [
                    f"{section}.{name}[].{item}"
                    for item in item_model.model_fields
                    if f"| `{item}` |" not in page
                ]
    assert not missing, f"docs/reference/settings.md does not name: {missing}"


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_every_docs_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    in_nav = list(_nav_pages(config["nav"]))
    pages = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(set(in_nav)) == sorted(in_nav), "a page is in the nav twice"
    assert [page for page in pages if page not in in_nav] == [], "pages missing from the nav"
    assert [page for page in in_nav if page not in pages] == [], "nav entries without a page"
