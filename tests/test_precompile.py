"""`python -m statestream.precompile` imports every module whose numba loops are cached
(`cache=True`): a module missing there compiles in a job's first batch instead (an executor of a
packed environment compiled for most of a minute when the list had been emptied by a linter)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from statestream import precompile

SRC = Path(__file__).resolve().parents[1] / "src"
CACHED = re.compile(r"cache\s*=\s*True")


def _cached_modules() -> set[str]:
    return {
        ".".join(path.relative_to(SRC).with_suffix("").parts)
        for path in (SRC / "statestream").rglob("*.py")
        if CACHED.search(path.read_text())
    }


def test_every_module_with_cached_loops_is_precompiled() -> None:
    cached = _cached_modules()
    assert cached  # the search finds them
    assert cached <= {module.__name__ for module in precompile.MODULES}


def test_precompile_runs_and_imports_them() -> None:
    code = "import sys, statestream.precompile as p; print(sorted(m.__name__ for m in p.MODULES))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "statestream.join.things" in done.stdout
