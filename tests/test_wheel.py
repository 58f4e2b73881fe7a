"""`python -m build` makes a wheel that installs the library, the CLI and the dashboard's assets.

The wheel goes into a fresh venv with `pip install --no-deps`; the venv reaches the dependencies
through a .pth file naming this environment's site-packages (a plain path: the editable install
of the checkout there is not activated), so nothing is downloaded and `statestream` can only be
imported from the wheel.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[1]
VENDOR = ROOT / "src" / "statestream" / "dashboard" / "static" / "vendor"

CHECK = """
import importlib.resources, sys
import statestream, statestream.spark, statestream.testing
from statestream.spark import complement_join, observations, write_exactly_once
static = importlib.resources.files("statestream.dashboard") / "static" / "vendor"
print(statestream.__file__)
print(",".join(sorted(p.name for p in static.iterdir())))
"""


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return done.stdout


def test_the_wheel_installs_the_library_the_cli_and_the_assets(tmp_path: Path) -> None:
    run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        tmp_path,
        ROOT,
        cwd=ROOT,
    )
    (wheel,) = tmp_path.glob("statestream-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    (purelib,) = (venv / "lib").glob("python3*/site-packages")
    (purelib / "project_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-deps",
        wheel,
        cwd=tmp_path,
    )

    help_text = run(venv / "bin" / "statestream", "--help", cwd=tmp_path)
    assert "join" in help_text and "bench" in help_text
    where, assets = run(python, "-c", CHECK, cwd=tmp_path).splitlines()
    assert Path(where).is_relative_to(purelib)  # the wheel's copy, not the checkout's
    vendored = sorted(p.name for p in VENDOR.iterdir() if not p.name.startswith("."))
    assert vendored and assets.split(",") == vendored
