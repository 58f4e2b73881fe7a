"""The docs keep up with the code: the reference pages name every command, every setting and every
public name of the Python API, every page is in mkdocs.yml's nav, the README stays a front page,
and no docstring or --help text states a measured timing (those live in the benchmark results).
No services needed."""

from __future__ import annotations

import ast
import importlib
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from pydantic import BaseModel

from statestream.cli import app
from statestream.config import ENV_NESTED_DELIMITER, ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API_PAGES = DOCS / "reference" / "api"
README_MAX_LINES = 250
# The packages whose public names the Python API reference documents, each by its home module
PUBLIC_PACKAGES = ("statestream.spark", "statestream.join", "statestream.testing",
                   "statestream.testing.spark")  # fmt: skip


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


def _public_names(package: str) -> list[str]:
    """A module's public names: its `__all__`, else what its source defines at the top level
    without a leading underscore and what it re-exports as `from m import name as name`."""
    module = importlib.import_module(package)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = []
    for node in ast.parse(Path(str(module.__file__)).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [target.id for target in targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.ImportFrom):
            names += [alias.name for alias in node.names if alias.asname == alias.name]
    return [name for name in names if not name.startswith("_")]


def _api_directives() -> list[str]:
    """The dotted paths of the `::: path` directives of the Python API reference pages."""
    pattern = re.compile(r"^::: ([\w.]+)[ \t]*$", re.MULTILINE)
    pages = sorted(API_PAGES.glob("*.md"))
    assert pages, "no Python API reference pages"
    return [match.group(1) for page in pages for match in pattern.finditer(page.read_text())]


def _resolved(path: str) -> Any:
    """The object a directive's path names: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(path)


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_the_api_reference_documents_every_public_name(package: str) -> None:
    """Each public name has a `:::` entry for the object the package gives under that name
    (`::: statestream.spark.batch_join.complement_join` for `statestream.spark`'s, loaded from
    its home module on first use), so a new public function cannot go undocumented."""
    module = importlib.import_module(package)
    names = _public_names(package)
    assert names, f"{package} has no public names"
    entries = {path.rsplit(".", 1)[-1]: path for path in _api_directives()}
    missing = [name for name in names if name not in entries]
    assert not missing, f"docs/reference/api/ has no `::: …` entry for {package}'s {missing}"
    other = [
        f"{name}: {entries[name]}"
        for name in names
        if _resolved(entries[name]) is not getattr(module, name)
    ]
    assert not other, f"these entries document another object than {package} gives: {other}"


def test_every_api_reference_entry_names_an_object() -> None:
    directives = _api_directives()
    names = [path.rsplit(".", 1)[-1] for path in directives]
    assert len(names) == len(set(names)), "two entries of one name (or one object twice)"
    for path in directives:
        assert _resolved(path) is not None, path


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


SOURCE = ROOT / "src" / "statestream"

# A measured timing or speed as a docstring or a --help text would state it. Narrow on purpose:
# - an approximate number with a time unit or a rate: "~0.4 s", "about 170 µs", "≈ 6 k messages/s";
# - a time a thing took, cost, added or saved: "took 2.2 s";
# - a time per something, or longer: "0.15–0.2 s per task", "20 ms each";
# - a speed-up: "~3× json.loads", "1.8x faster", "four times faster", "took four times as long".
# Numbers of behaviour, configuration or requirement pass: "Spark waits for a worker (10 s)",
# "every 25 s", "Target: ≥ 20,000 rows/s". The figures live in docs/benchmarks.
_NUMBER = r"\d[\d,]*(?:\.\d+)?(?:\s*[–-]\s*\d[\d,]*(?:\.\d+)?)?"
_UNIT = r"(?:ns|µs|us|ms|s|secs?|seconds?|min|minutes?|hours?)\b"
_RATE = r"(?:[kM]\s+)?[a-z]+/s\b"
_TIMES = r"(?:twice|(?:\d+(?:\.\d+)?|two|three|four|five|ten) times)"
MEASURED_TIMING = re.compile(
    "|".join(
        (
            rf"(?:~|≈|\babout|\baround|\broughly|\bnearly|\balmost)\s*{_NUMBER}\s*"
            rf"(?:{_UNIT}|{_RATE})",
            rf"\b(?:took|takes|costs?|adds?|added|saves?|saved|spent|spends)\s+(?:about\s+)?"
            rf"{_NUMBER}\s*{_UNIT}",
            rf"{_NUMBER}\s*{_UNIT}\s+(?:per|each|longer|shorter|of CPU)\b",
            r"(?<![\w.])\d+(?:\.\d+)?[×x](?!\w)",
            rf"\b{_TIMES} (?:faster|slower|as fast|as slow)\b",
            rf"\b(?:took|takes|costs?)\b(?:\s+\S+){{0,4}}?\s+{_TIMES} as (?:long|much)\b",
        )
    ),
    re.IGNORECASE,
)
# Phrases the pattern takes for measurements that are not, each with why it stays
TIMING_ALLOWED = (
    # how far a replay runs ahead of the clock: the sample's own spacing of rows, not a speed
    "the sample at 20 rows/s gains ~25 s a second",
)


def _prose(source: str) -> Iterator[tuple[int, str]]:
    """The docstrings (module, classes, functions) and the texts given as `help=` (Typer's
    options, arguments and groups) of a module's source, each with its line, on one line."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield node.body[0].lineno, " ".join(docstring.split())
        elif isinstance(node, ast.keyword) and node.arg == "help":
            for part in ast.walk(node.value):  # a literal, or the literal parts of an f-string
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield part.lineno, " ".join(part.value.split())


def _measured_timings(text: str) -> list[str]:
    for allowed in TIMING_ALLOWED:
        text = text.replace(allowed, "")
    return [match.group(0) for match in MEASURED_TIMING.finditer(text)]


def test_no_docstring_or_help_text_states_a_measured_timing() -> None:
    texts = {path: list(_prose(path.read_text())) for path in sorted(SOURCE.rglob("*.py"))}
    assert sum(map(len, texts.values())) > 1000  # the walk reaches the package's texts
    found = [
        f"{path.relative_to(ROOT)}:{line}: {timing!r}"
        for path, prose in texts.items()
        for line, text in prose
        for timing in _measured_timings(text)
    ]
    assert not found, (
        "measured timings go stale: say what a thing does and leave the numbers to the "
        f"benchmark results (docs/benchmarks): {found}"
    )


def test_the_timing_check_reads_docstrings_and_help_texts() -> None:
    source = (
        '"""A module; pandas would add ~0.3–0.5 s to that start."""\n'
        "import typer\n\n\n"
        "def command(rate: int = typer.Option(1, help=f'Rows/s; {1} batch took ' '2.2 s.')):\n"
        '    """A command, 1.8x faster\n    than paho."""\n'
    )
    found = [timing for _, text in _prose(source) for timing in _measured_timings(text)]
    assert sorted(found) == sorted(["~0.3–0.5 s", "1.8x", "took 2.2 s"])


@pytest.mark.parametrize(
    "text",
    [  # the docstrings' words before their timings went to the benchmark results
        "Spark's driver starts a Python process, and pandas would add ~0.3–0.5 s to that start.",
        "about 170 µs per QoS 1 message on the 2-core development machine (≈ 6 k messages/s)",
        "~100 full collections that took 2.2 s of CPU without this, 0.14 s with it.",
        "every zip importer then re-reads its whole archive's directory: 0.15–0.2 s per task",
        "import no pandas, pyarrow or compiled engine: with them that start took ~1 s longer.",
        "a small batch's read tasks cost their start (5 tasks of ~20 ms on 2 cores)",
        "record = orjson.loads(value)  # ~3× json.loads: parsing is most of a point's cost",
        "the writer is 1.8x faster than the baseline",
        "with thousands of things a batch, that took four times as long as this index",
        "turns each into a categorical, which cost a 282 k-row call twice as much",
        "it is three times faster than one huge piece",
    ],
)
def test_a_measured_timing_is_found(text: str) -> None:
    assert _measured_timings(text)


@pytest.mark.parametrize(
    "text",
    [  # behaviour, configuration and requirements: numbers that stay
        "the sample's job runs longer than Spark waits for a worker (10 s).",
        "more than 10 % and the lag may not exceed 30 s of the load, or the run fails.",
        "at seeded random moments (about one kill every 25 s; a short run more often), again "
        "after 0.5–5 s.",
        "with paho-mqtt in the connector, and the ratio printed. Target: ≥ 20,000 rows/s.",
        "Simulated vehicles (1 position/s each).",
        "the broker's default wait there (500 ms for more data) would be added to every batch",
        ">>> line  # 'batch 3: 1,200 in, 7 pairs, 0.50 s, event-time lag –'",
        "the codes of `column` in an array twice as long.",
        "a replay runs ahead of the clock (the sample at 20 rows/s gains ~25 s a second).",
    ],
)
def test_a_number_of_behaviour_is_no_measured_timing(text: str) -> None:
    assert _measured_timings(text) == []
