"""Production code does not import the testing helpers: `statestream.testing` is for users' and
our tests, and may import anything; the product must not depend on it. (The class archive's
training script is the one exception: it runs a short stream into memory, as a test would.)"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "statestream"
EXCEPTIONS = {SRC / "jobs" / "_class_training.py"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_production_code_does_not_import_the_testing_helpers() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in sorted(SRC.rglob("*.py"))
        if "testing" not in path.relative_to(SRC).parts[:1]
        and path not in EXCEPTIONS
        and any(name.startswith("statestream.testing") for name in _imports(path))
    ]
    assert offenders == []
