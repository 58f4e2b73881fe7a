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


# ---- layers: codecs → pure cores → Spark runtime → queries → tools, no cycles ---------------

PURE = ("codecs", "join", "stats", "geo")  # they know numpy, numba, h3, pyarrow: no Spark, Kafka
FRAMEWORKS = ("pyspark", "confluent_kafka", "paho", "requests")
# a lazy import that closes a cycle, kept lazy for start time (each says so where it stands)
LAZY_CYCLES = {("join.names", "join.name_index")}  # the compiled index: compiled when used


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in SRC.rglob("*.py")}


def _resolved(name: str) -> str | None:
    """The statestream module an import names (a name imported from a module: that module)."""
    name = name.removeprefix("statestream").removeprefix(".")
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_imports(path: Path) -> tuple[set[str], set[str], set[str]]:
    """(statestream modules imported at the top, inside functions, other top-level packages),
    imports under `if TYPE_CHECKING:` left out."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    in_functions = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
    }
    top, lazy, others = set(), set(), set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if not name.startswith("statestream"):
                others.add(name.split(".")[0])
            elif (module := _resolved(name)) is not None and module != _module(path):
                (lazy if id(node) in in_functions else top).add(module)
    return top, lazy, others


IMPORTS = {module: _runtime_imports(path) for module, path in MODULES.items()}


def _reaches(start: str, goal: str) -> bool:
    seen, stack = set(), [start]
    while stack:
        module = stack.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            stack += IMPORTS.get(module, (set(), set(), set()))[0]
    return False


def test_no_import_inside_a_function_dodges_a_cycle() -> None:
    cycles = {
        (module, target)
        for module, (_, lazy, _) in IMPORTS.items()
        for target in lazy
        if _reaches(target, module)
    }
    assert cycles == LAZY_CYCLES


def test_no_two_packages_depend_on_each_other() -> None:
    package = {module: module.split(".")[0] for module in MODULES}
    uses: dict[str, set[str]] = {}
    for module, (top, lazy, _) in IMPORTS.items():
        for target in top | lazy:
            if package[target] != package[module]:
                uses.setdefault(package[module], set()).add(package[target])
    mutual = sorted({tuple(sorted((a, b))) for a in uses for b in uses[a] if a in uses.get(b, ())})
    assert mutual == []


def test_the_pure_cores_know_no_framework_and_nothing_above_them() -> None:
    allowed = {*PURE, "errors"}
    offenders = {
        module: sorted(
            {t.split(".")[0] for t in top | lazy} - allowed
            | {name for name in others if name in FRAMEWORKS}
        )
        for module, (top, lazy, others) in IMPORTS.items()
        if module.split(".")[0] in PURE
    }
    assert {module: bad for module, bad in offenders.items() if bad} == {}
