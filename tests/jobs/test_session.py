"""The Spark session factory's configuration, checked without starting Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.config import load_settings
from statestream.environment import find_java
from statestream.errors import EnvironmentProblem
from statestream.jobs.session import (
    RAISED_JIT_THRESHOLDS,
    connector_jars,
    spark_options,
    spark_session,
    statestream_jars,
)
from statestream.spark.stored_engines import ROCKSDB_PROVIDER


def _jars(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"")


def test_connector_jars_leave_out_what_pyspark_ships(tmp_path: Path) -> None:
    _jars(
        tmp_path / "spark-kafka",
        "spark-sql-kafka-0-10_2.13-4.1.3.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
        "kafka-clients-3.9.1.jar",
        "commons-pool2-2.12.1.jar",
        "scala-library-2.13.15.jar",
        "slf4j-api-1.7.36.jar",
        "jsr305-3.0.0.jar",
        "snappy-java-1.1.10.5.jar",
    )
    settings = load_settings(paths={"jars_dir": tmp_path})
    assert [jar.name for jar in connector_jars(settings)] == [
        "commons-pool2-2.12.1.jar",
        "kafka-clients-3.9.1.jar",
        "spark-sql-kafka-0-10_2.13-4.1.3.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    ]


def test_connector_jars_installed_by_setup() -> None:
    names = {jar.name.split("-")[0:2][0] for jar in connector_jars(load_settings())}
    assert names == {"commons", "kafka", "spark"}


def test_missing_connector_jars_say_run_make_setup(tmp_path: Path) -> None:
    settings = load_settings(paths={"jars_dir": tmp_path})
    with pytest.raises(EnvironmentProblem, match=r"spark-kafka jars are missing .*make setup"):
        connector_jars(settings)


def test_the_exactly_once_sink_goes_with_the_connector(tmp_path: Path) -> None:
    _jars(tmp_path / "spark-kafka", "spark-sql-kafka-0-10_2.13-4.1.3.jar")
    settings = load_settings(paths={"jars_dir": tmp_path})
    with pytest.raises(EnvironmentProblem, match=r"exactly-once jars are missing .*make setup"):
        statestream_jars(settings)
    _jars(tmp_path / "exactly-once", "statestream-exactly-once.jar")
    assert [jar.name for jar in statestream_jars(settings)] == [
        "spark-sql-kafka-0-10_2.13-4.1.3.jar",
        "statestream-exactly-once.jar",
    ]


def test_the_exactly_once_sink_is_built_by_setup() -> None:
    assert "statestream-exactly-once.jar" in spark_options(load_settings())["spark.jars"]


def test_spark_options(tmp_path: Path) -> None:
    settings = load_settings(
        paths={"data_dir": tmp_path}, spark={"extra_conf": {"spark.sql.shuffle.partitions": "7"}}
    )
    options = spark_options(settings, app_name="job", for_tests=True)
    assert options["spark.app.name"] == "job"
    assert options["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert options["spark.sql.session.timeZone"] == "UTC"
    assert options["spark.ui.enabled"] == "false"
    assert options["spark.sql.streaming.checkpointLocation"] == str(tmp_path / "checkpoints")
    assert options["spark.sql.shuffle.partitions"] == "7"  # extra_conf wins
    assert "spark-sql-kafka" in options["spark.jars"]
    assert "log4j2.properties" in options["spark.driver.extraJavaOptions"]


@pytest.mark.parametrize("java_options", ["", "-XX:TieredStopAtLevel=1 -Xss4m"])
def test_java_options_go_to_the_driver_and_the_executors(tmp_path: Path, java_options: str) -> None:
    settings = load_settings(paths={"data_dir": tmp_path}, spark={"java_options": java_options})
    options = spark_options(settings)
    driver = options["spark.driver.extraJavaOptions"].split()
    assert driver[0].startswith("-Dlog4j2.configurationFile=file:")  # ours stays first
    # the driver's whole heap from the start, the default collector, the raised JIT
    # thresholds, then java_options
    jit = list(RAISED_JIT_THRESHOLDS)
    assert driver[1:] == ["-Xms2g", "-XX:+UseParallelGC", *jit, *java_options.split()]
    assert options["spark.executor.extraJavaOptions"].split() == driver[2:]


@pytest.mark.parametrize(
    ("collector", "java_options", "expected"),
    [
        ("g1", "", "-XX:+UseG1GC"),
        ("parallel", "-Xss4m", "-XX:+UseParallelGC -Xss4m"),
        # a JVM refuses two collectors: one chosen in java_options wins
        ("parallel", "-XX:+UseZGC -Xss4m", "-XX:+UseZGC -Xss4m"),
        ("g1", "-XX:+UseSerialGC", "-XX:+UseSerialGC"),
        # a flag that tunes the parallel collector chooses none
        (
            "parallel",
            "-XX:+UseMaximumCompactionOnSystemGC",
            "-XX:+UseParallelGC -XX:+UseMaximumCompactionOnSystemGC",
        ),
    ],
)
def test_the_garbage_collector_goes_to_every_jvm_once(
    tmp_path: Path, collector: str, java_options: str, expected: str
) -> None:
    settings = load_settings(
        paths={"data_dir": tmp_path},
        spark={
            "garbage_collector": collector,
            "java_options": java_options,
            "raised_jit_thresholds": False,
        },
    )
    options = spark_options(settings)
    assert options["spark.driver.extraJavaOptions"].split()[2:] == expected.split()
    assert options["spark.executor.extraJavaOptions"] == expected


@pytest.mark.parametrize(
    ("section", "driver"),
    [
        ({"driver_memory": "4GB"}, "-Xms4g -XX:+UseParallelGC"),  # as a JVM flag takes a size
        ({"driver_memory": "2048"}, "-Xms2048m -XX:+UseParallelGC"),  # Spark reads MiB
        ({"fixed_heap": False}, "-XX:+UseParallelGC"),
        # the JVM takes the last -Xms: one in java_options wins
        ({"java_options": "-Xms1g"}, "-Xms2g -XX:+UseParallelGC -Xms1g"),
    ],
)
def test_the_driver_starts_with_its_whole_heap(tmp_path: Path, section: dict, driver: str) -> None:
    settings = load_settings(
        paths={"data_dir": tmp_path},
        spark={"java_options": "", "raised_jit_thresholds": False, **section},
    )
    options = spark_options(settings)
    assert options["spark.driver.extraJavaOptions"].split()[1:] == driver.split()
    assert "-Xms" not in options["spark.executor.extraJavaOptions"].replace("-Xms1g", "")


def test_raised_jit_thresholds_go_to_every_jvm_and_java_options_win(tmp_path: Path) -> None:
    """A JVM takes the last of a flag given twice: a threshold in java_options wins."""
    mine = "-XX:Tier4InvocationThreshold=7000"
    settings = load_settings(paths={"data_dir": tmp_path}, spark={"java_options": mine})
    options = spark_options(settings)
    executor = options["spark.executor.extraJavaOptions"].split()
    assert executor == ["-XX:+UseParallelGC", *RAISED_JIT_THRESHOLDS, mine]
    assert options["spark.driver.extraJavaOptions"].split()[2:] == executor
    off = load_settings(paths={"data_dir": tmp_path}, spark={"raised_jit_thresholds": False})
    assert "Tier4" not in spark_options(off)["spark.executor.extraJavaOptions"]


def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(EnvironmentProblem, match="Java is not installed"):
        find_java()
    with pytest.raises(EnvironmentProblem, match="Java is not installed"):
        spark_session(load_settings())
