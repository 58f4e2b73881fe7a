"""The Python worker daemon drops pyspark's archives from the path only when it is safe to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

ARCHIVES = sorted(str(p) for p in (Path(pyspark.__file__).parent / "python/lib").glob("*.zip"))
SRC = str(Path(__file__).resolve().parents[1] / "src")
PROBE = """
import json, sys
from statestream.python_daemon import drop_archives_from_path
dropped = drop_archives_from_path()
import pyspark
print(json.dumps({"dropped": dropped, "path": sys.path, "pyspark": pyspark.__file__}))
"""


def _probe(*python_flags: str, pythonpath: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    done = subprocess.run(
        [sys.executable, *python_flags, "-c", PROBE], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_archives_are_dropped_when_site_packages_has_pyspark() -> None:
    assert len(ARCHIVES) == 2  # pyspark.zip and py4j's, as Spark puts them on the path
    probe = _probe(pythonpath=ARCHIVES)
    assert probe["dropped"] is True
    assert not [entry for entry in probe["path"] if entry.endswith((".zip", ".jar"))]
    assert ".zip" not in probe["pyspark"]


def test_archives_stay_when_pyspark_is_only_in_them() -> None:
    probe = _probe("-S", pythonpath=[*ARCHIVES, SRC])  # -S: no site-packages
    assert probe["dropped"] is False
    assert [entry for entry in probe["path"] if entry in ARCHIVES] == ARCHIVES
    assert "pyspark.zip" in probe["pyspark"]
