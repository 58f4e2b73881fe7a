"""Which class archive a driver starts with, checked without starting Spark (that the JVM maps
it: tests/integration/test_driver_jvm.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from statestream.config import load_settings
from statestream.jobs.class_archive import archive_path, driver_option, fingerprint
from statestream.jobs.session import spark_options


def _options(*jars: Path) -> dict[str, str]:
    return {"spark.jars": ",".join(str(jar) for jar in jars)}


def test_the_fingerprint_follows_the_driver_jars(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jar", tmp_path / "b.jar"
    first.write_bytes(b"one")
    second.write_bytes(b"two")
    before = fingerprint(_options(first, second))
    assert fingerprint(_options(first, second)) == before
    assert fingerprint(_options(first)) != before
    os.utime(second, ns=(1, 1))  # the same size, another time: another jar
    touched = fingerprint(_options(first, second))
    assert touched != before
    second.write_bytes(b"twice")
    os.utime(second, ns=(1, 1))
    assert fingerprint(_options(first, second)) not in (before, touched)
    class_path = {"spark.driver.extraClassPath": str(first)}
    assert fingerprint(class_path) != fingerprint({})


def test_the_fingerprint_follows_the_java_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    homes = []
    for name in ("jdk-a", "jdk-b"):
        java = tmp_path / name / "bin" / "java"
        java.parent.mkdir(parents=True)
        java.write_text("#!/bin/sh\n")
        java.chmod(0o755)
        (tmp_path / name / "release").write_text(f'JAVA_VERSION="{name}"\n')
        homes.append(tmp_path / name)
    prints = []
    for home in homes:
        monkeypatch.setenv("JAVA_HOME", str(home))
        prints.append(fingerprint({}))
    assert prints[0] != prints[1]


def test_a_driver_gets_the_archive_only_when_written_switched_on_and_not_chosen_otherwise(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "archives"
    settings = load_settings(paths={"data_dir": tmp_path, "class_archive_dir": folder})
    options = spark_options(settings, new_driver=True)
    assert driver_option(settings, options) == ""  # not written
    assert "SharedArchiveFile" not in options["spark.driver.extraJavaOptions"]
    path = archive_path(settings, options)
    assert path.parent == folder
    folder.mkdir()
    path.write_bytes(b"")
    assert driver_option(settings, options) == f"-XX:SharedArchiveFile={path}"
    started = spark_options(settings, new_driver=True)["spark.driver.extraJavaOptions"]
    assert started.split()[-1] == f"-XX:SharedArchiveFile={path}"
    # under spark-submit the driver is running already; executors never get it
    assert "SharedArchiveFile" not in spark_options(settings)["spark.driver.extraJavaOptions"]
    executors = spark_options(settings, new_driver=True)["spark.executor.extraJavaOptions"]
    assert "SharedArchiveFile" not in executors
    paths = {"data_dir": tmp_path, "class_archive_dir": folder}
    mine = {"spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/opt/mine.jsa"}
    for spark in (
        {"class_archive": False},
        {"java_options": "-Xshare:off"},
        {"extra_conf": mine},
    ):
        other = load_settings(paths=paths, spark=spark)
        other_options = spark_options(other, new_driver=True)
        assert driver_option(other, other_options) == ""
        assert other_options["spark.driver.extraJavaOptions"].count("SharedArchiveFile") <= 1
