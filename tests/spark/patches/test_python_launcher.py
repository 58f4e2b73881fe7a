"""The launcher Spark runs as Python: the module it is asked for, without pyspark's archives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from statestream.config import load_settings
from statestream.spark.patches import python_executable, python_launcher

ARCHIVES = sorted(str(p) for p in (Path(pyspark.__file__).parent / "python/lib").glob("*.zip"))
PROBE = """
import json, sys
import pyspark
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "pyspark": pyspark.__file__}))
"""


def _launch(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The launcher as Spark starts it: the archives first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(ARCHIVES)}
    script = str(python_launcher.script_path())
    return subprocess.run([script, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_runs_the_module_with_pyspark_from_site_packages(tmp_path: Path) -> None:
    assert len(ARCHIVES) == 2  # pyspark.zip and py4j's, as Spark puts them on the path
    (tmp_path / "probe_module.py").write_text(PROBE)
    done = _launch(tmp_path, "-m", "probe_module", "one", "two")
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert ".zip" not in probe["pyspark"]
    assert probe["argv"] == [str(tmp_path / "probe_module.py"), "one", "two"]  # as `python -m`
    assert probe["path0"] == str(tmp_path)  # the current folder first, as `python -m`


def test_the_modules_exit_status_is_the_launchers(tmp_path: Path) -> None:
    (tmp_path / "failing_module.py").write_text("import sys\nsys.exit(3)\n")
    assert _launch(tmp_path, "-m", "failing_module").returncode == 3


def test_anything_but_dash_m_is_a_usage_error(tmp_path: Path) -> None:
    done = _launch(tmp_path, "-c", "print(1)")
    assert done.returncode != 0
    assert "usage: statestream-spark-python -m MODULE" in done.stderr


def test_spark_runs_the_launcher_while_the_patches_are_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert python_executable(load_settings()) == str(python_launcher.script_path())
    monkeypatch.setenv("STATESTREAM_SPARK__PATCHES", "false")
    assert python_executable(load_settings()) == sys.executable
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_another_pyspark_turns_the_launcher_off_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pyspark, "__version__", "5.0.0")
    for _ in range(3):
        assert python_executable(load_settings()) == sys.executable
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "statestream: patch python_launcher off: written for pyspark 4.x, found 5.0.0"
    ]


def test_the_worker_daemon_starts_without_a_warning_of_runpy(tmp_path: Path) -> None:
    """The launcher imports nothing of the module it runs: runpy warns of one found imported."""
    (tmp_path / "probe_module.py").write_text(
        "import sys\nprint('statestream.spark.patches.python_daemon' in sys.modules)\n"
    )
    done = _launch(tmp_path, "-m", "probe_module")
    assert done.stdout.strip() == "False", done.stderr
    # Spark's daemon writes its port (binary) and ends at the end of its input, here at once
    daemon = subprocess.run(
        [str(python_launcher.script_path()), "-m", "statestream.spark.patches.python_daemon"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(ARCHIVES)},
        capture_output=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    stderr = daemon.stderr.decode(errors="replace")
    assert len(daemon.stdout) == 4 and "RuntimeWarning" not in stderr, stderr  # it started
