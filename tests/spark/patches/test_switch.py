"""One switch for all the patches, a version check each, one warning line for a patch off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from statestream.config import load_settings
from statestream.jobs.session import spark_options
from statestream.spark.patches import spark_conf
from statestream.spark.patches.local_fs import NIO_LOCAL_FS
from statestream.spark.patches.python_daemon import MODULE

RAW_LOCAL_FS = "org.apache.hadoop.fs.local.RawLocalFs"


def _built(tmp_path: Path) -> Path:
    """`make setup`'s jars in `tmp_path`, empty; the local-fs one returned."""
    for jar in (
        "spark-kafka/spark-sql-kafka-0-10_2.13-4.1.3.jar",
        "exactly-once/statestream-exactly-once.jar",
        "local-fs/statestream-local-fs.jar",
    ):
        (tmp_path / jar).parent.mkdir()
        (tmp_path / jar).write_bytes(b"")
    return tmp_path / "local-fs" / "statestream-local-fs.jar"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]


def test_on_by_default(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    jar = _built(tmp_path)
    settings = load_settings(paths={"jars_dir": tmp_path})
    assert settings.spark.patches is True
    options = spark_options(settings, new_driver=True)
    assert options["spark.python.daemon.module"] == MODULE
    assert options["spark.driver.extraClassPath"] == str(jar)
    assert options["spark.hadoop.fs.AbstractFileSystem.file.impl"] == NIO_LOCAL_FS
    assert _warnings(caplog) == []  # PySpark 4.1 here: every patch applies


def test_the_switch_off_gives_sparks_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _built(tmp_path)
    monkeypatch.setenv("STATESTREAM_SPARK__PATCHES", "false")
    settings = load_settings(paths={"jars_dir": tmp_path})
    assert settings.spark.patches is False
    for _ in range(3):  # one session after another: one warning
        options = spark_options(settings, new_driver=True)
    assert "spark.python.daemon.module" not in options  # Spark's own pyspark.daemon
    assert "spark.driver.extraClassPath" not in options
    assert options["spark.hadoop.fs.AbstractFileSystem.file.impl"] == RAW_LOCAL_FS
    assert _warnings(caplog) == [
        "statestream: patches python_daemon, python_launcher, grouped_rows, map_state_calls, "
        "freed_memory, local_fs off: spark.patches is false"
    ]


def test_another_pyspark_turns_grouped_rows_off_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar = _built(tmp_path)
    monkeypatch.setattr(pyspark, "__version__", "4.2.0")
    settings = load_settings(paths={"jars_dir": tmp_path})
    for _ in range(3):
        conf = spark_conf(settings, new_driver=True)
    assert conf == {
        "spark.python.daemon.module": MODULE,  # it installs the grouped rows only on 4.1
        "spark.driver.extraClassPath": str(jar),
        "spark.hadoop.fs.AbstractFileSystem.file.impl": NIO_LOCAL_FS,
    }
    assert _warnings(caplog) == [
        "statestream: patch grouped_rows off: written for pyspark 4.1.x, found 4.2.0",
        "statestream: patch map_state_calls off: written for pyspark 4.1.x, found 4.2.0",
    ]


def test_another_major_pyspark_turns_all_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _built(tmp_path)
    monkeypatch.setattr(pyspark, "__version__", "5.0.0")
    assert spark_conf(load_settings(paths={"jars_dir": tmp_path}), new_driver=True) == {}
    assert _warnings(caplog) == [
        "statestream: patch bucket_labels unchecked: written for pyspark 4.x, found 5.0.0; labels "
        "kept (they are state keys), their spread over the shuffle partitions may be uneven",
        "statestream: patch python_daemon off: written for pyspark 4.x, found 5.0.0",
        "statestream: patch grouped_rows off: it is installed by the python_daemon patch, "
        "which is off",
        "statestream: patch map_state_calls off: it is installed by the python_daemon patch, "
        "which is off",
        "statestream: patch freed_memory off: it is installed by the python_daemon patch, "
        "which is off",
        "statestream: patch local_fs off: written for pyspark 4.x, found 5.0.0",
    ]


def test_the_daemon_and_the_package_import_no_pyspark() -> None:
    """The daemon takes the archives off the path before pyspark is imported."""
    probe = (
        "import json, sys\n"
        "import statestream.python_daemon, statestream.spark.patches.python_daemon\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark')))"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", probe], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
