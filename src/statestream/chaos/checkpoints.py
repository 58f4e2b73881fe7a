"""The size of a run's checkpoints, as a soak must read it: what Spark keeps, apart from when it
deletes.

Spark keeps a query's newest `spark.sql.streaming.minBatchesToRetain` batches: per batch an
offset log and a commit log entry, and per state partition a changelog (`<version>.changelog`,
version = batch + 1) and now and then a snapshot (`<version>.zip`, its RocksDB files in
`SSTs/`). It purges the logs at every batch, but deletes the state's old versions only when the
state store's maintenance runs (`spark.sql.streaming.stateStore.maintenanceInterval`, a minute),
and only back to a snapshot the versions it keeps can be rebuilt from. So the state folder holds
the newest batches and, depending on when it is looked at, up to a minute of batches and a
snapshot's worth of changelogs more: its size saws up and down while nothing grows.

A `CheckpointSize` splits a query's checkpoint accordingly:

- `window_bytes`: the files of its newest `retained` batches and every file that belongs to no
  one batch (metadata, schemas, the snapshots' SST files, statestream's own files): what the
  checkpoint must hold. A checkpoint that keeps more per batch, or a file that only grows,
  grows it.
- `batches`: how many batches it holds, from its oldest file of a batch to its newest. A
  checkpoint whose old batches are no longer deleted grows it.
- `bytes`: all of its files.

    >>> size = CheckpointSize(bytes=9_000, window_bytes=6_000, batches=130)
    >>> size.window_bytes / size.bytes
    0.6666666666666666
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

RETAINED_BATCHES = 100  # Spark's default spark.sql.streaming.minBatchesToRetain
RETAINED_OPTION = "spark.sql.streaming.minBatchesToRetain"
_LOGS = ("offsets", "commits")
# a state version's file: 12.changelog, 12.zip, 12_<id>.changelog (checkpoint format 2), each
# perhaps with Hadoop's checksum beside it (.12.changelog.crc) or after it (12.changelog.crc)
_STATE_VERSION = re.compile(r"^\.?(\d+)(?:_[0-9a-fA-F-]+)?\.(?:changelog|zip|delta|snapshot)")


@dataclass(frozen=True)
class CheckpointSize:
    bytes: int
    window_bytes: int
    batches: int


def retained_batches(spark_conf: dict[str, str]) -> int:
    """How many batches Spark keeps, as the pipeline's Spark configuration sets it.

    >>> retained_batches({})
    100
    >>> retained_batches({"spark.sql.streaming.minBatchesToRetain": "20"})
    20
    """
    return int(spark_conf.get(RETAINED_OPTION, RETAINED_BATCHES))


def checkpoint_sizes(root: Path, retained: int = RETAINED_BATCHES) -> dict[str, CheckpointSize]:
    """The size of each query's checkpoint folder below `root` (`<root>/<query>`)."""
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return {folder.name: checkpoint_size(folder, retained) for folder in folders}


def checkpoint_size(folder: Path, retained: int = RETAINED_BATCHES) -> CheckpointSize:
    """The size of one query's checkpoint `folder`, keeping its newest `retained` batches."""
    files = list(_files(folder))
    batches = [batch for batch, _size in files if batch is not None]
    newest = max(batches, default=0)
    return CheckpointSize(
        bytes=sum(size for _batch, size in files),
        window_bytes=sum(
            size for batch, size in files if batch is None or batch > newest - retained
        ),
        batches=newest - min(batches) + 1 if batches else 0,
    )


def folder_bytes(folder: Path) -> int:
    """Bytes of the files below `folder` (0 when there is none)."""
    return sum(size for _batch, size in _files(folder))


def _files(folder: Path) -> Iterator[tuple[int | None, int]]:
    """Each file below `folder`: the batch it belongs to (None: no one batch) and its size."""
    for root, _dirs, names in os.walk(folder):
        part = Path(root).relative_to(folder).parts
        for name in names:
            try:
                size = os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue  # deleted by Spark meanwhile
            yield _batch_of(part[0] if part else "", name), size


def _batch_of(top: str, name: str) -> int | None:
    """The batch a checkpoint file belongs to: a log entry's number, a state version - 1."""
    if top in _LOGS:
        number = name.lstrip(".").removesuffix(".crc")
        return int(number) if number.isdigit() else None
    if top == "state":
        version = _STATE_VERSION.match(name)
        return int(version.group(1)) - 1 if version else None
    return None
