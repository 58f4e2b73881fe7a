"""The driver's JVM runs with the heap, the garbage collector and the JIT thresholds the
settings give it."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from statestream.config import Settings
from statestream.config.sections import jvm_memory_size
from statestream.jobs.session import RAISED_JIT_THRESHOLDS

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
