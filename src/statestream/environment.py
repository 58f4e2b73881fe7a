"""What statestream needs from the machine: Java, a few programs, the JVM jars `make setup` copies.

Each lookup returns a path or raises `EnvironmentProblem` saying what is missing and what to do.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from statestream.errors import EnvironmentProblem

_SYSTEM_BIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


def find_executable(name: str, package: str) -> str:
    """The path of program `name` (also looked up in the sbin folders), or a clear error."""
    search_path = os.pathsep.join([os.environ.get("PATH", ""), *_SYSTEM_BIN_DIRS])
    found = shutil.which(name, path=search_path)
    if found is None:
        raise EnvironmentProblem(
            f"{name} is not installed (Debian package {package}): run `make setup`"
        )
    return found


def find_java() -> str:
    """The `java` of JAVA_HOME or PATH, or a clear error."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise EnvironmentProblem(
            "Java is not installed (no java on PATH, no JAVA_HOME): install a JDK 17 "
            "(e.g. apt-get install openjdk-17-jre-headless) and run `make setup`"
        )
    return found


def jar_dir(jars_dir: Path, name: str, required_prefix: str) -> Path:
    """The folder `<jars_dir>/<name>` that `make setup` fills, checked to hold `<prefix>*.jar`."""
    folder = jars_dir / name
    if not any(folder.glob(f"{required_prefix}*.jar")):
        raise EnvironmentProblem(f"the {name} jars are missing in {folder}: run `make setup`")
    return folder


def spark_jars_dir() -> Path:
    """The jars of the Spark in use: SPARK_HOME's, else the pinned PySpark's own."""
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home and (Path(spark_home) / "jars").is_dir():
        return Path(spark_home) / "jars"
    import pyspark  # lazy: reading the environment should not import PySpark

    return Path(pyspark.__file__).parent / "jars"
