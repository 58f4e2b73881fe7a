"""Checkpoints on local disk through `jvm/local-fs` (`NioLocalFs`) instead of Hadoop's own.

Hadoop's local file system runs a shell command (chmod, readlink) per file it writes and per
rename without its native library, dozens per micro-batch; `NioLocalFs` does the same through
java.nio. Only for a local master started here: the jar goes on the driver's class path, which
is set when the driver's JVM is launched (not under spark-submit, not on a cluster).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from statestream.config import Settings

NAME = "local_fs"
WRITTEN_FOR = "4."  # compiled against the Hadoop 3 client that PySpark 4 ships
NIO_LOCAL_FS = "io.statestream.fs.NioLocalFs"
_OWN_KEYS = ("spark.driver.extraClassPath", "spark.hadoop.fs.AbstractFileSystem.file.impl")


def jar(settings: Settings) -> Path:
    """Where `make setup` builds `jvm/local-fs`."""
    return settings.paths.jars_dir / "local-fs" / "statestream-local-fs.jar"


def for_this_session(settings: Settings) -> bool:
    """Whether a session of `settings` could use it at all: a local master."""
    return settings.spark.master.startswith("local")


def applies(settings: Settings) -> str | None:
    """None when the local master's driver can load the jar, else why not."""
    from statestream.spark.patches._checks import unsupported

    reason = unsupported(WRITTEN_FOR)
    if reason is not None:
        return reason
    if not jar(settings).is_file():
        return f"{jar(settings)} is not built (make setup)"
    taken = [key for key in _OWN_KEYS if key in settings.spark.extra_conf]
    if taken:
        return f"spark.extra_conf sets {', '.join(taken)}"
    return None


def spark_conf(settings: Settings) -> dict[str, str]:
    """The driver's class path and Hadoop's `file:` implementation, for a driver started here."""
    return {
        "spark.driver.extraClassPath": str(jar(settings)),
        "spark.hadoop.fs.AbstractFileSystem.file.impl": NIO_LOCAL_FS,
    }
