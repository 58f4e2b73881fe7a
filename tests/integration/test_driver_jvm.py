"""The driver's JVM runs with the heap, the garbage collector, the JIT thresholds and the class
archive the settings give it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.config.sections import jvm_memory_size
from statestream.jobs.class_archive import archive_path
from statestream.jobs.session import RAISED_JIT_THRESHOLDS, spark_options

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_YOUNG_COLLECTORS = {"parallel": "PS Scavenge", "g1": "G1 Young Generation"}


def _management(spark: SparkSession):
    return spark.sparkContext._jvm.java.lang.management.ManagementFactory


def test_the_driver_starts_with_its_whole_heap(spark: SparkSession, settings: Settings) -> None:
    if not settings.spark.fixed_heap or "-Xms" in settings.spark.java_options:
        pytest.skip("these settings leave the initial heap to the JVM or to java_options")
    size = jvm_memory_size(settings.spark.driver_memory)
    arguments = list(_management(spark).getRuntimeMXBean().getInputArguments())
    assert f"-Xms{size}" in arguments
    heap = _management(spark).getMemoryMXBean().getHeapMemoryUsage()
    assert heap.getInit() == int(size[:-1]) * _UNITS[size[-1]]


def test_the_driver_runs_the_chosen_collector(spark: SparkSession, settings: Settings) -> None:
    if "GC" in settings.spark.java_options:
        pytest.skip("java_options may choose the collector")
    beans = _management(spark).getGarbageCollectorMXBeans()
    names = [bean.getName() for bean in beans]
    assert _YOUNG_COLLECTORS[settings.spark.garbage_collector] in names


def test_the_driver_runs_with_the_raised_jit_thresholds(
    spark: SparkSession, settings: Settings
) -> None:
    if not settings.spark.raised_jit_thresholds or "Tier4" in settings.spark.java_options:
        pytest.skip("these settings leave the JIT's thresholds to the JVM or to java_options")
    jvm = spark.sparkContext._jvm
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    for flag in RAISED_JIT_THRESHOLDS:
        name, value = flag.removeprefix("-XX:").split("=")
        assert hotspot.getVMOption(name).getValue() == value


_STARTED = (
    "from statestream.config import load_settings\n"
    "from statestream.jobs.session import spark_session\n"
    "spark = spark_session(load_settings())\n"
    "spark.range(10).count()\n"
    # what a query stopped between its batches does: cancel its job group, which has no job
    "spark.sparkContext.cancelJobGroup('statestream-between-batches')\n"
    "scheduler = 'org.apache.spark.scheduler.DAGScheduler'\n"
    "spark.sparkContext._jvm.org.slf4j.LoggerFactory.getLogger(scheduler).warn('other warning')\n"
)


@dataclass(frozen=True)
class _NewDriver:
    """A driver started in a process of its own, as a job's: its output and class-load log."""

    done: subprocess.CompletedProcess
    classes: Path


@pytest.fixture(scope="module")
def new_driver(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> _NewDriver:
    folder = tmp_path_factory.mktemp("new-driver")
    log = folder / "classes.log"
    java = f"{settings.spark.java_options} -Xlog:class+load=info:file={log}"
    env = {**os.environ, "STATESTREAM_SPARK__JAVA_OPTIONS": java}
    env["STATESTREAM_PATHS__DATA_DIR"] = str(folder / "data")
    done = subprocess.run(
        [sys.executable, "-c", _STARTED], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return _NewDriver(done, log)


def test_a_new_driver_maps_spark_s_classes_from_the_archive_make_setup_wrote(
    settings: Settings, new_driver: _NewDriver
) -> None:
    options = spark_options(settings, new_driver=True)
    path = archive_path(settings, options)
    driver = options["spark.driver.extraJavaOptions"]
    left_to_java_options = path.is_file() and f"-XX:SharedArchiveFile={path}" not in driver
    if not settings.spark.class_archive or left_to_java_options:
        pytest.skip("these settings start the driver without the class archive")
    assert path.is_file(), f"make setup wrote no class archive {path} (see training.log there)"
    assert "Unable to use shared archive" not in new_driver.done.stdout + new_driver.done.stderr
    sources = [
        line.rpartition(" source: ")[2]
        for line in new_driver.classes.read_text().splitlines()
        if "] org.apache.spark." in line
    ]  # Spark's classes but those a lambda defines at run time (their source: a class)
    mapped = sources.count("shared objects file (top)")
    read = sum(source.startswith(("file:", "jar:")) for source in sources)
    assert mapped > 1000 and mapped > 0.9 * (mapped + read), (mapped, read)


def test_a_job_group_cancelled_without_jobs_is_not_logged(new_driver: _NewDriver) -> None:
    """Each query stopped between its batches made Spark warn that its group had no job."""
    stderr = new_driver.done.stderr
    assert "Cannot find active jobs" not in stderr, stderr[-2000:]
    assert "WARN DAGScheduler: other warning" in stderr, stderr[-2000:]  # the others still are
