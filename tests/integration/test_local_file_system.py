"""jvm/local-fs: Hadoop's local file system without shell commands, for Spark's checkpoints."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from statestream.spark.patches.local_fs import NIO_LOCAL_FS


def _file_system(spark: SparkSession):
    jvm = spark.sparkContext._jvm
    fs = jvm.io.statestream.fs.NioRawLocalFileSystem()
    fs.initialize(jvm.java.net.URI("file:///"), spark.sparkContext._jsc.hadoopConfiguration())
    return jvm, fs


def test_the_session_writes_local_checkpoints_through_it(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    assert conf.get("fs.AbstractFileSystem.file.impl") == NIO_LOCAL_FS
    local = jvm.java.net.URI("file:///")
    context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(local, conf)
    assert context.getDefaultFileSystem().getClass().getName() == NIO_LOCAL_FS


def test_permissions_are_set_as_hadoop_would(spark: SparkSession, tmp_path: Path) -> None:
    jvm, fs = _file_system(spark)
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission
    target = tmp_path / "state.changelog"
    target.write_text("x")
    for symbolic, mode in (("-rw-r-----", 0o640), ("-rwxr-xr-x", 0o755), ("-r--------", 0o400)):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(target)), permission.valueOf(symbolic))
        assert os.stat(target).st_mode & 0o777 == mode


def test_link_status_tells_links_from_files(spark: SparkSession, tmp_path: Path) -> None:
    jvm, fs = _file_system(spark)
    target = tmp_path / "1.changelog"
    target.write_text("12345")
    link = tmp_path / "link"
    link.symlink_to(target)
    plain = fs.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(str(target)))
    assert not plain.isSymlink() and plain.getLen() == 5
    linked = fs.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(str(link)))
    assert linked.isSymlink() and linked.getSymlink().toUri().getPath() == str(target)
