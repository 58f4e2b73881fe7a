"""What the kill -9 tests of the `run` queries share: the query's command in a process group of
its own, a SIGKILL after so many printed lines, and the crash sequence they all go through."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def start_run(command: str, env: dict[str, str], checkpoint: Path, *extra: str) -> subprocess.Popen:
    """`statestream run <command>` with `env` added, two shuffle partitions, in its own process
    group; Spark's logs go to `job.err` beside the checkpoint."""
    environment = {**os.environ, "STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2", **env}
    args = [sys.executable, "-m", "statestream", "run", command, "--checkpoint", str(checkpoint)]
    with open(checkpoint.parent / "job.err", "a") as err:
        return subprocess.Popen(
            [*args, *extra],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def kill_after(job: subprocess.Popen, prefix: str, count: int, delay_s: float) -> int:
    """Let the job print `count` lines starting with `prefix`, then SIGKILL its process group."""
    seen = 0
    assert job.stdout is not None
    watchdog = threading.Timer(300, os.killpg, (job.pid, signal.SIGKILL))
    watchdog.start()  # a job that hangs is killed, so readline returns
    try:
        while seen < count:
            line = job.stdout.readline()
            if not line:
                break
            seen += line.startswith(prefix)
        time.sleep(delay_s)
    finally:
        watchdog.cancel()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGKILL)
    job.communicate()
    return seen


def crash_and_finish(
    command: str, env: dict[str, str], checkpoint: Path, *options: str, inside_batch: bool = True
) -> None:
    """Kill `run <command>` after a committed Kafka transaction, before Spark recorded the batch
    as done (Spark runs that batch again on restart, and the writer must recognise and skip
    it), then, with `inside_batch`, somewhere inside a batch; then run it to the end
    (--available-now) and check that it ended well and that the replay was skipped."""
    job = start_run(command, env, checkpoint, *options, "--pause-after-commit", "30")
    assert kill_after(job, "committed batch ", 1, 0.5) == 1
    if inside_batch:
        job = start_run(command, env, checkpoint, *options)
        assert kill_after(job, "batch ", 2, 0.7) >= 1, "the job made no progress"
    final = start_run(command, env, checkpoint, *options, "--available-now")
    out, _ = final.communicate(timeout=600)
    err = (checkpoint.parent / "job.err").read_text()
    assert final.returncode == 0, out + err[-3000:]
    assert "was committed before; skipped" in err  # the replay did happen, and was skipped
