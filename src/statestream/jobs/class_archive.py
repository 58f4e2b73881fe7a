"""A class-data archive for the driver's JVM: Spark's classes mapped from a file, not loaded.

A Spark driver loads and verifies some ten thousand classes before its first batch, a large
part of each start (a job, a restart after a crash, a test run).
HotSpot's application class-data sharing (AppCDS) keeps them parsed and verified in an archive
that later JVMs map. `make setup` writes one (`python -m statestream.jobs.class_archive_setup`): a
short training run, a batch and a streaming complement join, is dumped at its exit
(`-XX:ArchiveClassesAtExit`). `spark_session` then starts the driver with
`-XX:SharedArchiveFile` when the archive of this Java and this class path exists.

The archive's name is a hash of the Java installation and of every jar on the driver's class
path (name, size, modification time): a new PySpark, jar or JDK names another archive, so
`make setup` writes it again. The JVM checks the same things itself: an archive it cannot use
is left aside with one warning line (`Unable to use shared archive`) and the driver starts as
without it, only slower. `STATESTREAM_SPARK__CLASS_ARCHIVE=false` leaves it out.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from statestream.config import Settings
from statestream.environment import find_java, spark_jars_dir

SUFFIX = ".jsa"
_SHARING_FLAGS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")


def driver_option(settings: Settings, options: dict[str, str]) -> str:
    """`-XX:SharedArchiveFile=…` for a driver started with `options` (`spark_options`), or ""
    when the archive is switched off or not written for this Java and class path."""
    if not settings.spark.class_archive or _sharing_chosen(options):
        return ""
    path = archive_path(settings, options)
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""


def _sharing_chosen(options: dict[str, str]) -> bool:
    """Whether the driver's options already decide on class-data sharing (`spark.java_options`
    or `extra_conf`'s spark.driver.extraJavaOptions): they win."""
    driver = options.get("spark.driver.extraJavaOptions", "")
    return any(flag in driver for flag in _SHARING_FLAGS)


def archive_path(settings: Settings, options: dict[str, str]) -> Path:
    """Where the archive of this Java and of the class path of `options` is (or would be)."""
    return settings.paths.class_archive_dir / f"driver-{fingerprint(options)}{SUFFIX}"


def fingerprint(options: dict[str, str]) -> str:
    """A hash of the Java installation and of the jars a driver started with `options` loads:
    Spark's own, `spark.jars` and `spark.driver.extraClassPath`."""
    digest = hashlib.sha256()
    java = Path(find_java()).resolve()
    home = java.parent.parent
    for path in (java, home / "release", home / "lib" / "modules", *_libjvm(home)):
        digest.update(_stamp(path))
    jars = sorted(spark_jars_dir().glob("*.jar"))
    jars += [Path(jar) for jar in options.get("spark.jars", "").split(",") if jar]
    extra = options.get("spark.driver.extraClassPath", "")
    jars += [Path(entry) for entry in extra.split(os.pathsep) if entry]
    for jar in jars:
        digest.update(_stamp(jar))
    return digest.hexdigest()[:16]


def _libjvm(home: Path) -> list[Path]:
    return sorted(home.glob("lib/*/libjvm.so"))


def _stamp(path: Path) -> bytes:
    """The path, size and modification time of a file (or that it is missing)."""
    try:
        stat = path.stat()
    except OSError:
        return f"{path}:missing\n".encode()
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode()


def write_archive(target: Path) -> None:
    """Write the archive `target` (`archive_path`) by a training run in a new Python process.
    Archives of other Java installations or class paths in the same folder are removed."""
    import subprocess

    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="class-archive-", dir=folder) as work:
        dumped = Path(work) / f"new{SUFFIX}"
        log = folder / "training.log"
        with log.open("w") as out:
            done = subprocess.run(
                [sys.executable, "-m", "statestream.jobs._class_training", str(dumped), work],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=600,
                check=False,
            )
        if done.returncode != 0 or not dumped.is_file():
            raise RuntimeError(f"the training run failed (exit {done.returncode}): see {log}")
        os.replace(dumped, target)
    for stale in folder.glob(f"driver-*{SUFFIX}"):
        if stale != target:
            stale.unlink()
