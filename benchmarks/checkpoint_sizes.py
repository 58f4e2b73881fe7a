"""The size of a streaming query's checkpoint over a run, sampled in a thread.

The join's state is one row per machine, so on a steady input its checkpoint should stop growing
once Spark's retention (`spark.sql.streaming.minBatchesToRetain`, 100 batches of logs and state
versions) and the state store's maintenance have caught up: `CheckpointSizes` records the bytes
on disk every few seconds, and `thirds` gives the median size in each third of the run. (The
size saws up and down: changelogs pile up between snapshots and the maintenance deletes old
versions, and a machine's state holds the records still waiting for the other series.)
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from statestream.chaos.checkpoints import folder_bytes  # shared with the chaos run's samples


class CheckpointSizes:
    """Samples (seconds since start, bytes) of a checkpoint folder every `every_s` seconds."""

    def __init__(self, folder: Path, every_s: float = 5.0) -> None:
        self.folder = folder
        self.every_s = every_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-sizes", daemon=True)
        self._started = 0.0

    def __enter__(self) -> CheckpointSizes:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(30)
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def _sample(self) -> None:
        self.samples.append((round(time.monotonic() - self._started, 1), folder_bytes(self.folder)))


def thirds(samples: list[tuple[float, int]]) -> list[int]:
    """The median size in the first, second and last third of the samples' time."""
    if not samples:
        return []
    end = samples[-1][0]
    parts: list[list[int]] = [[], [], []]
    for at, size in samples:
        parts[min(2, int(3 * at / end)) if end else 2].append(size)
    return [int(statistics.median(part)) if part else 0 for part in parts]
