"""jvm/local-fs goes on a local driver's class path only when it is built and not overridden."""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.config import load_settings
from statestream.spark.patches import spark_conf
from statestream.spark.patches.local_fs import NIO_LOCAL_FS

LOCAL_FS_KEYS = {"spark.driver.extraClassPath", "spark.hadoop.fs.AbstractFileSystem.file.impl"}


def _local_fs(conf: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in conf.items() if key in LOCAL_FS_KEYS}


def test_local_checkpoints_use_jvm_local_fs_when_built(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jar = tmp_path / "local-fs" / "statestream-local-fs.jar"
    settings = load_settings(paths={"jars_dir": tmp_path})
    assert _local_fs(spark_conf(settings, new_driver=True)) == {}  # not built: Hadoop's own
    assert [r.getMessage() for r in caplog.records] == [
        f"statestream: patch local_fs off: {jar} is not built (make setup)"
    ]
    jar.parent.mkdir()
    jar.write_bytes(b"")
    assert _local_fs(spark_conf(settings, new_driver=True)) == {
        "spark.driver.extraClassPath": str(jar),
        "spark.hadoop.fs.AbstractFileSystem.file.impl": NIO_LOCAL_FS,
    }
    assert _local_fs(spark_conf(settings)) == {}  # the driver is launched by spark-submit
    assert len(caplog.records) == 1


def test_only_for_a_local_master_and_not_against_extra_conf(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jar = tmp_path / "local-fs" / "statestream-local-fs.jar"
    jar.parent.mkdir()
    jar.write_bytes(b"")
    cluster = load_settings(paths={"jars_dir": tmp_path}, spark={"master": "spark://m:7077"})
    assert _local_fs(spark_conf(cluster, new_driver=True)) == {}
    assert caplog.records == []  # a cluster is no reason to warn
    own_class_path = load_settings(
        paths={"jars_dir": tmp_path}, spark={"extra_conf": {"spark.driver.extraClassPath": "/x"}}
    )
    assert _local_fs(spark_conf(own_class_path, new_driver=True)) == {}
    assert [r.getMessage() for r in caplog.records] == [
        "statestream: patch local_fs off: spark.extra_conf sets spark.driver.extraClassPath"
    ]
