"""The driver's JVM runs with the heap, the garbage collector, the JIT thresholds and the class
archive the settings give it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.config.sections import jvm_memory_size
from statestream.jobs.class_archive import archive_path, driver_option
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
    "spark_session(load_settings()).range(10).count()\n"
)


def test_a_new_driver_maps_spark_s_classes_from_the_archive_make_setup_wrote(
    settings: Settings, tmp_path: Path
) -> None:
    options = spark_options(settings, new_driver=True)
    path = archive_path(settings, options)
    left_to_java_options = path.is_file() and not driver_option(settings, options)
    if not settings.spark.class_archive or left_to_java_options:
        pytest.skip("these settings start the driver without the class archive")
    assert path.is_file(), f"make setup wrote no class archive {path} (see training.log there)"
    log = tmp_path / "classes.log"
    java = f"{settings.spark.java_options} -Xlog:class+load=info:file={log}"
    env = {**os.environ, "STATESTREAM_SPARK__JAVA_OPTIONS": java}
    env["STATESTREAM_PATHS__DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-c", _STARTED], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unable to use shared archive" not in done.stdout + done.stderr
    sources = [
        line.rpartition(" source: ")[2]
        for line in log.read_text().splitlines()
        if "] org.apache.spark." in line
    ]  # Spark's classes but those a lambda defines at run time (their source: a class)
    mapped = sources.count("shared objects file (top)")
    read = sum(source.startswith(("file:", "jar:")) for source in sources)
    assert mapped > 1000 and mapped > 0.9 * (mapped + read), (mapped, read)
