"""The one way statestream builds a SparkSession: Kafka connector, RocksDB state, UTC, quiet logs.

    >>> spark = spark_session(load_settings(), app_name="demo-counts")  # doctest: +SKIP

Under `spark-submit`, what spark-submit set (master, memory, …) is kept and only the options it
left unset are added; the Kafka connector must then be on its command line (`--jars`).
"""

from __future__ import annotations

import os
import re
import sys
from importlib import resources
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from statestream.config import LOCAL_HOSTS, Settings
from statestream.config.sections import jvm_memory_size
from statestream.environment import find_java, jar_dir, spark_jars_dir
from statestream.errors import EnvironmentProblem
from statestream.jobs import class_archive
from statestream.jobs.driver_watchdog import watched_launch
from statestream.spark import patches
from statestream.spark.stored_engines import ROCKSDB_PROVIDER

_JAR_NAME = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d+(?:\.\d+)+[^/]*)\.jar$")


def spark_session(
    settings: Settings, *, app_name: str | None = None, for_tests: bool = False
) -> SparkSession:
    """The active SparkSession, or a new one configured from `settings` (getOrCreate).

    `for_tests` turns the UI off and keeps the parallelism small whatever the settings say. A
    driver JVM it launches is watched: it ends with this Python (`driver_watchdog`).
    Raises `EnvironmentProblem` when Java or the Kafka connector jars are missing.
    """
    find_java()
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    options = spark_options(
        settings, app_name=app_name, for_tests=for_tests, new_driver=not under_submit
    )
    if under_submit:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        options = _left_to_us_by_spark_submit(options)
    else:
        # Spark's Python processes: this Python, through the python_launcher patch
        os.environ["PYSPARK_PYTHON"] = patches.python_executable(settings)
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        if _on_this_machine(settings.spark.master):
            # no "resolves to loopback" warning; the local cluster's executors reach the driver
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        options["spark.master"] = settings.spark.master
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    with watched_launch(enabled=not under_submit):  # spark-submit's JVM is not ours
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.spark.log_level)
    _report_status(spark, settings)
    return spark


def _on_this_machine(master: str) -> bool:
    """True for a local master and for a standalone master on localhost (`services up`'s)."""
    host = master.removeprefix("spark://").rpartition(":")[0]
    return master.startswith("local") or host in LOCAL_HOSTS


def _report_status(spark: SparkSession, settings: Settings) -> None:
    """Let every query of this session report its figures for `statestream status` (once)."""
    from statestream.jobs.status import install_status_listener, status_folder

    install_status_listener(spark, status_folder(settings))


def spark_options(
    settings: Settings,
    *,
    app_name: str | None = None,
    for_tests: bool = False,
    new_driver: bool = False,
) -> dict[str, str]:
    """The Spark configuration statestream sets (all but the master), extra_conf last.

    `new_driver`: the driver's JVM is launched with these options (not under spark-submit), so
    the patches that go on its class path can be among them (`statestream.spark.patches`).
    """
    spark = settings.spark
    log4j = resources.files("statestream.jobs") / "log4j2.properties"
    java = jvm_options(spark.java_options, spark.garbage_collector, spark.raised_jit_thresholds)
    heap = _initial_heap(spark.driver_memory, spark.fixed_heap)
    driver_java = " ".join(
        part for part in (f"-Dlog4j2.configurationFile=file:{log4j}", heap, java) if part
    )
    options = {
        "spark.app.name": app_name or spark.app_name,
        "spark.jars": ",".join(str(jar) for jar in statestream_jars(settings)),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        # commit writes the changed keys instead of a snapshot: shorter batches, lower latency
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.shuffle.partitions": str(2 if for_tests else spark.shuffle_partitions),
        "spark.sql.streaming.checkpointLocation": str(settings.checkpoint_root),
        # checkpoint logs and state changelogs on local disk without Hadoop's .crc side files
        # (Spark keeps its own checksums of state files); a local master started here goes further
        # (the local_fs patch)
        "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
        "spark.ui.enabled": str(spark.ui_enabled and not for_tests).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # rows reach the stateful processors in Arrow batches of this many (Spark: 10,000);
        # fewer, bigger batches shorten the Python side of a large batch
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.driver.memory": spark.driver_memory,
        "spark.driver.extraJavaOptions": driver_java,
        "spark.executor.extraJavaOptions": java,
        # the worker daemon, the grouped rows, local-fs: statestream.spark.patches (spark.patches)
        **patches.spark_conf(settings, new_driver=new_driver),
        **spark.extra_conf,
    }
    if new_driver:  # its JVM starts with these options: it can map the class archive
        archive = class_archive.driver_option(settings, options)
        if archive:
            options["spark.driver.extraJavaOptions"] += f" {archive}"
    return options


_COLLECTORS = {"parallel": "-XX:+UseParallelGC", "g1": "-XX:+UseG1GC"}
# the flags that choose a collector (not those that tune one, such as
# -XX:+UseMaximumCompactionOnSystemGC)
_CHOSEN_COLLECTOR = re.compile(
    r"-XX:\+Use(Serial|Parallel|ParallelOld|G1|Z|Shenandoah|Epsilon|ConcMarkSweep)GC\b"
)


# HotSpot's thresholds for compiling a method with C2, its optimizing compiler, about three
# times its defaults (5000, 600, 15000 and 40000 in Java 17): on two cores C2 otherwise spends a
# young JVM's first minutes on lukewarm code, with CPU the tasks need
# (docs/how-to/spark-tuning.md, "JIT thresholds")
RAISED_JIT_THRESHOLDS = (
    "-XX:Tier4InvocationThreshold=15000",
    "-XX:Tier4MinInvocationThreshold=2400",
    "-XX:Tier4CompileThreshold=30000",
    "-XX:Tier4BackEdgeThreshold=120000",
)


def jvm_options(java_options: str, garbage_collector: str, raised_jit_thresholds: bool) -> str:
    """The options of Spark's JVMs: the garbage collector, the JIT's thresholds if raised, then
    `java_options` (a JVM takes the last of a flag given twice, so those there win; and it
    refuses two collectors, so one chosen there wins and `garbage_collector` is left out)."""
    java = java_options.strip()
    jit = " ".join(RAISED_JIT_THRESHOLDS) if raised_jit_thresholds else ""
    collector = "" if _CHOSEN_COLLECTOR.search(java) else _COLLECTORS[garbage_collector]
    return " ".join(part for part in (collector, jit, java) if part)


def _initial_heap(driver_memory: str, fixed_heap: bool) -> str:
    """The driver's -Xms: all of its heap from the start with `fixed_heap`, else none (an -Xms
    in java_options comes after this one, and a JVM takes the last)."""
    return f"-Xms{jvm_memory_size(driver_memory)}" if fixed_heap else ""


def statestream_jars(settings: Settings) -> list[Path]:
    """Spark's Kafka connector and statestream's exactly-once Kafka sink (`jvm/exactly-once`)."""
    sink = jar_dir(settings.paths.jars_dir, "exactly-once", "statestream-exactly-once")
    return [*connector_jars(settings), *sink.glob("statestream-exactly-once.jar")]


def connector_jars(settings: Settings) -> list[Path]:
    """Spark's Kafka connector jars, without those Spark ships itself (to avoid two versions)."""
    folder = jar_dir(settings.paths.jars_dir, "spark-kafka", "spark-sql-kafka-")
    shipped = {_artifact(jar.name) for jar in spark_jars_dir().glob("*.jar")}
    return sorted(jar for jar in folder.glob("*.jar") if _artifact(jar.name) not in shipped)


def _artifact(file_name: str) -> str:
    """`kafka-clients` for `kafka-clients-3.9.1.jar`: the jar's name without its version."""
    match = _JAR_NAME.match(file_name)
    return match.group("artifact") if match else file_name


def _left_to_us_by_spark_submit(options: dict[str, str]) -> dict[str, str]:
    """The options spark-submit has not set (it passes its own as JVM system properties).

    The driver JVM is already running, so jars can no longer be added: without the Kafka
    connector or statestream's exactly-once sink on spark-submit's command line, say how to put
    them there.
    """
    SparkContext._ensure_initialized()  # connects to the JVM spark-submit started
    submitted = SparkConf()
    deployed = submitted.get("spark.jars", "") + submitted.get("spark.jars.packages", "")
    needed = ("spark-sql-kafka", "statestream-exactly-once")
    missing = [jar for jar in needed if jar not in deployed]
    if missing:
        raise EnvironmentProblem(
            f"spark-submit was started without {' and '.join(missing)}: add "
            f"--jars {options['spark.jars']}"
        )
    return {
        key: value
        for key, value in options.items()
        if key != "spark.jars" and not submitted.contains(key)
    }
