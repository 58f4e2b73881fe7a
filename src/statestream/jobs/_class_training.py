"""The training run of the driver's class archive (`class_archive.write_archive` starts it):
a Spark driver that runs a batch and a streaming complement join on RocksDB state, resolves the
Kafka source and exits, its JVM dumping the classes it loaded into the archive.

    python -m statestream.jobs._class_training ARCHIVE WORK_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from statestream.config import load_settings
from statestream.jobs.session import spark_session
from statestream.join import SpecTemplate
from statestream.spark import complement_join
from statestream.testing.spark import MemorySink, observation_frame, observation_stream

_JVM_EXIT_TIMEOUT_S = 300


def _workload(spark: SparkSession, work: Path) -> None:
    """What a statestream driver does first: a batch join, a streaming join to its end with
    its checkpoint and state, and a Kafka source (resolved, not started)."""
    rows = [
        (f"m{k % 3}", "vaTorque_C1" if k % 2 else "actSpeed_C1", 1_600_000_000_000 + 1000 * k,
         float(k), k)
        for k in range(300)
    ]  # fmt: skip
    complement_join(observation_frame(spark, rows), [SpecTemplate()], order="offset").collect()
    stream = observation_stream(spark, [rows[:150], rows[150:]], work / "in")
    sink = MemorySink(work / "checkpoint")
    sink.run(complement_join(stream, [SpecTemplate()], order="offset"))
    (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "localhost:9")
        .option("subscribe", "statestream-class-archive")
        .load()
    )


def main(archive: Path, work: Path) -> int:
    base = load_settings()
    java = f"{base.spark.java_options} -XX:ArchiveClassesAtExit={archive}".strip()
    settings = load_settings(
        paths={"data_dir": work / "data"},
        spark={"java_options": java, "class_archive": False, "ui_enabled": False},
    )
    spark = spark_session(settings, app_name="statestream-class-archive")
    jvm = SparkContext._gateway.proc  # type: ignore[union-attr]
    _workload(spark, work)
    spark.stop()
    jvm.stdin.close()  # the gateway exits at the end of its input; the JVM dumps the archive
    jvm.wait(_JVM_EXIT_TIMEOUT_S)
    return jvm.returncode


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2])))
