"""`make test`'s script fails a run in which pytest ran no test: a green run that ran nothing
would prove nothing (pytest's exit code 5)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_a_run_that_selects_no_test_fails() -> None:
    """Among this module's tests only: collecting the whole suite would prove nothing more."""
    selection = ["-k", "no_test_is_named_like_this", str(Path(__file__).relative_to(ROOT))]
    done = subprocess.run(
        ["bash", "scripts/test.sh", *selection, "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 5, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ran no test" in done.stderr
