"""spark-submit with a packed environment, as docs/how-to/spark-submit.md shows it, and a watch on
the executors' Python processes.

`PackedEnvironment` runs scripts/pack-spark-env.sh in the background; `submit_pipeline` runs the
docs' spark-submit of `statestream run pipeline` from the folder it packed into, with nothing
of the checkout's `.venv` in its environment; `PythonProcessWatch` samples /proc while the job
runs, to show which Python the executors ran and where its libraries came from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from statestream.jobs.session import statestream_jars
from statestream.services._process import command_line
from tests.integration.cluster_support import REPO, JobProcess, clean_environment, cluster_settings

ARCHIVE = "statestream-spark-env.tar.gz"
EXECUTOR_PYTHON = "./environment/bin/python"  # the archive unpacked in each executor's folder
SITE_PACKAGES = "lib/python3.11/site-packages"
_CHECKOUT_ENV = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "SPARK_HOME")


class PackedEnvironment:
    """`scripts/pack-spark-env.sh out` started in the background (it takes ~40 s: pip and gzip of
    ~1 GB), so a test module can go on while it runs; `wait` gives `out` when it is done."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            ["bash", "scripts/pack-spark-env.sh", str(out)],
            cwd=REPO,
            env=_outside_the_checkout(clean_environment()),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait(self, timeout_s: float = 600) -> Path:
        """`out` with the wheel, `out/spark-env` and the archive; fails if the script did."""
        printed, _ = self.process.communicate(timeout=timeout_s)
        assert self.process.returncode == 0, printed[-5000:]
        assert (self.out / ARCHIVE).is_file()
        assert (self.out / "environment").resolve() == (self.out / "spark-env").resolve()
        return self.out

    def stop(self) -> None:
        """Kill the script if it still runs (a module that ended early)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def submit_pipeline(dist: Path, env: dict[str, str], log: Path, *options: str) -> JobProcess:
    """The docs' spark-submit of `statestream run pipeline *options`, from `dist`.

    The driver runs `dist/spark-env`'s Python and spark-submit, the executors the archive's
    Python; the jars are those statestream's own session would add (`statestream_jars`).
    """
    settings = cluster_settings(env)
    python = dist / "spark-env" / "bin" / "python"
    jars = ",".join(str(jar) for jar in statestream_jars(settings))
    args = [
        "spark-env/bin/spark-submit",
        *("--master", settings.spark.master),
        *("--archives", f"{ARCHIVE}#environment"),
        *("--conf", f"spark.pyspark.driver.python={python}"),
        *("--conf", f"spark.pyspark.python={EXECUTOR_PYTHON}"),
        *("--jars", jars),
        f"environment/{SITE_PACKAGES}/statestream/__main__.py",
        *("run", "pipeline", *options),
    ]
    environment = {
        **_outside_the_checkout(clean_environment()),
        **env,
        "STATESTREAM_PATHS__JARS_DIR": str(settings.paths.jars_dir),
        "PYSPARK_DRIVER_PYTHON": str(python),
    }
    return JobProcess(args, environment, log, cwd=dist)


def remove_packed(dist: Path, workers: Path) -> None:
    """The packed environment and the executors' unpacked copies of it (2 GB a run)."""
    shutil.rmtree(dist, ignore_errors=True)
    for unpacked in workers.glob("*/work/*/*/environment"):
        shutil.rmtree(unpacked, ignore_errors=True)


def _outside_the_checkout(environment: dict[str, str]) -> dict[str, str]:
    """`environment` without a way to the checkout's `.venv`: no VIRTUAL_ENV, PYTHONPATH,
    SPARK_HOME, nor `.venv/bin` on the PATH."""
    venv_bin = str(REPO / ".venv" / "bin")
    path = [entry for entry in environment.get("PATH", "").split(os.pathsep) if entry != venv_bin]
    kept = {k: v for k, v in environment.items() if k not in _CHECKOUT_ENV}
    return {**kept, "PATH": os.pathsep.join(path)}


@dataclass
class PythonProcess:
    """A Python process seen in an executor's folder: its command line, its working folder, and
    the files it mapped from a site-packages folder (extension modules and their libraries)."""

    command: str
    cwd: Path
    libraries: set[str] = field(default_factory=set)

    @property
    def library_folders(self) -> set[str]:
        """The site-packages folders its libraries came from."""
        return {lib.partition(SITE_PACKAGES)[0] + SITE_PACKAGES for lib in self.libraries}


class PythonProcessWatch:
    """Every Python process whose working folder is under `root` (the workers' folders), sampled
    from /proc twice a second while the `with` block runs; `processes` by pid."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: dict[int, PythonProcess] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> PythonProcessWatch:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            for proc in Path("/proc").iterdir():
                if proc.name.isdigit():
                    self._sample(int(proc.name))

    def _sample(self, pid: int) -> None:
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            args = command_line(pid)
            if not cwd.is_relative_to(self.root) or not args:
                return
            if not Path(args[0]).name.startswith("python"):
                return
            maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
        except OSError:  # gone, or not ours to read
            return
        seen = self.processes.setdefault(pid, PythonProcess(" ".join(args), cwd))
        seen.libraries |= {line.split()[-1] for line in maps if SITE_PACKAGES in line}
