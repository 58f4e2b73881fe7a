"""What a chaos run samples each minute, and, for a soak (`--kills 0`), whether it stayed flat.

Each sample holds the resident memory and the open files (descriptors: files, sockets, pipes) of
every part (a process group: the pipeline's driver JVM and its Python workers count together;
a leak of sockets shows in its files long before the part runs out of them), the state the
run's queries hold (its rows and RocksDB's files, as their progress reports give them), the
size of the run's checkpoints on disk, and the Kafka lag of its queries (records between what
their last batch read and the topics' ends at that batch).

A run without kills should reach a steady state: over its last `SETTLED_MINUTES` (the last two
thirds of a shorter run; each figure's peak in the first third of those samples against its peak
in the last third, so that a sawtooth of a garbage collector or a cache is flat) memory, open
files, state and checkpoints may not grow by more than `FLAT` (open files: and by more than
`FILES_NOISE`), the lag may not exceed `LAG_S` seconds of the load, and no part may have ended
on its own (`ended_on_their_own`). A checkpoint's size is its window (`chaos.checkpoints`: the
files of the batches Spark must keep), since the files Spark deletes only once a minute saw it up
and down; the batches it holds may not grow either: their fewest in the last third may not pass
their most in the first by more than `FLAT`, which a sawtooth never does and a checkpoint whose
old batches stay always does. The state's files may grow by `STATE_NOISE_MB` besides: a state
of a few hundred kB moves by several times its size as RocksDB flushes and compacts, while its
rows, held to `FLAT`, show a state that keeps what it should drop.

    >>> flat = [Sample(60.0 * i, {"pipeline": 900.0}, 10_000, 5_000, 40) for i in range(7)]
    >>> not_flat(flat, rate=20.0)
    []
    >>> grows = [Sample(60.0 * i, {"pipeline": 900.0 + 100 * i}, 10**4, 5000, 40) for i in range(7)]
    >>> not_flat(grows, rate=20.0)
    ['memory of pipeline grew 36 % over the last 5 samples (from 1,100 to 1,500 MB)']
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from statestream.chaos.checkpoints import CheckpointSize
from statestream.jobs.lag import progress_lag

SETTLED_MINUTES = 40
FLAT = 0.10  # growth allowed over the settled part of a soak
LAG_S = 30.0  # the most lag a soak may show, in seconds of its load
FILES_NOISE = 100  # open files a part may gain anyway (connections, state store files)
STATE_NOISE_MB = 1.0  # the state's files may gain anyway (RocksDB's flushes and compactions)
PAGE = os.sysconf("SC_PAGE_SIZE")
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class Sample:
    at_s: float  # after the load started
    rss_mb: Mapping[str, float]  # per part
    state_bytes: int
    checkpoint_bytes: int  # all their files
    lag_records: int
    open_files: Mapping[str, int] = field(default_factory=dict)  # per part
    checkpoints: Mapping[str, CheckpointSize] = field(default_factory=dict)  # per query
    state_rows: int = 0

    @property
    def checkpoint_window_bytes(self) -> int:
        """The files of the batches the checkpoints must keep (`chaos.checkpoints`)."""
        return sum(size.window_bytes for size in self.checkpoints.values())

    @property
    def checkpoint_batches(self) -> int:
        """The most batches a query's checkpoint holds."""
        return max((size.batches for size in self.checkpoints.values()), default=0)

    def to_json(self) -> dict[str, object]:
        return {
            **asdict(self),
            "rss_mb": {k: round(v, 1) for k, v in self.rss_mb.items()},
            "checkpoint_window_bytes": self.checkpoint_window_bytes,
            "checkpoint_batches": self.checkpoint_batches,
        }


def group_rss_mb(pid: int | None) -> float:
    """Resident memory of process `pid`'s process group, in MB (0 when it is not running)."""
    pages = 0
    for process in _group_of(pid):
        try:
            pages += int((process / "statm").read_text().split()[1])
        except (FileNotFoundError, IndexError, ValueError, OSError):
            continue  # ended meanwhile
    return pages * PAGE / 1e6


def group_open_files(pid: int | None) -> int:
    """Open file descriptors of process `pid`'s process group (0 when it is not running)."""
    files = 0
    for process in _group_of(pid):
        try:
            files += len(os.listdir(process / "fd"))
        except OSError:
            continue  # ended meanwhile
    return files


def _group_of(pid: int | None) -> list[Path]:
    """The /proc folders of the processes in process `pid`'s group (none when it is gone)."""
    if pid is None:
        return []
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return []
    members = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == group:
                members.append(entry)
        except (ProcessLookupError, OSError):
            continue
    return members


def ended_on_their_own(exits: Mapping[str, int]) -> list[str]:
    """A soak's parts that ended without a kill (`exits` per part), each a problem: a part
    that must be started again under steady load has a fault (a leak, a crash) to find.

    >>> ended_on_their_own({"pipeline": 1, "kafka": 0})
    ['pipeline ended on its own 1 time(s) without a kill: see its log']
    """
    return [
        f"{part} ended on its own {count} time(s) without a kill: see its log"
        for part, count in exits.items()
        if count
    ]


def queries_state_and_lag(status_folder: Path, pid: int | None) -> tuple[int, int, int]:
    """State bytes, state rows and Kafka lag of the queries process `pid` runs, from their last
    progress report (`<query>.<run>.progress`: `stateOperators`, and per source `endOffset`
    against `latestOffset`, `jobs.lag`)."""
    state = rows = lag = 0
    for path in status_folder.glob("*.json") if status_folder.is_dir() else []:
        try:
            if json.loads(path.read_text()).get("pid") != pid:
                continue
            progress = json.loads(path.with_suffix(".progress").read_text()).get("progress", {})
        except (OSError, ValueError, AttributeError):
            continue
        operators = progress.get("stateOperators") or []
        state += sum(_state_bytes(operator) for operator in operators)
        rows += sum(int(operator.get("numRowsTotal") or 0) for operator in operators)
        lag += progress_lag(progress)
    return state, rows, lag


def _state_bytes(operator: dict) -> int:
    """A stateful operator's state: its RocksDB SST files (`rocksdbSstFileSize`), or, in a store
    without them, the memory its state uses (`memoryUsedBytes`)."""
    custom = operator.get("customMetrics") or {}
    return int(custom.get("rocksdbSstFileSize") or operator.get("memoryUsedBytes") or 0)


def not_flat(samples: Sequence[Sample], rate: float) -> list[str]:
    """What did not stay flat over the settled part of a run without kills (nothing: flat)."""
    settled = settled_samples(samples)
    if len(settled) < 2:
        return []
    series = [
        (f"memory of {part}", *_peaks([sample.rss_mb.get(part, 0.0) for sample in settled]))
        for part in settled[-1].rss_mb
    ]
    windows = [sample.checkpoint_window_bytes / 1e6 for sample in settled]
    series.append((CHECKPOINTS, *_peaks(windows)))
    problems = [
        f"{what} grew {(after / before - 1) * 100:.0f} % over the last {len(settled)} samples "
        f"(from {before:,.0f} to {after:,.0f} MB{where})"
        for what, before, after in series
        if before > 0 and after > before * (1 + FLAT)
        for where in [_most_grown(settled) if what == CHECKPOINTS else ""]
    ]
    for part in settled[-1].open_files:
        first, last = _peaks([sample.open_files.get(part, 0) for sample in settled])
        if first > 0 and last > first * (1 + FLAT) and last - first > FILES_NOISE:
            problems.append(
                f"open files of {part} grew from {first:,.0f} to {last:,.0f} over the last "
                f"{len(settled)} samples"
            )
    problems += _state_grew(settled)
    problems += _old_batches_kept([sample.checkpoint_batches for sample in settled])
    most_lag = max(sample.lag_records for sample in settled)
    if most_lag > LAG_S * rate:
        problems.append(f"Kafka lag reached {most_lag:,} records (> {LAG_S:.0f} s of the load)")
    return problems


def _thirds(values: Sequence[float]) -> tuple[Sequence[float], Sequence[float]]:
    """The first third of a figure's settled samples and the last (one each at least)."""
    third = max(1, len(values) // 3)
    return values[:third], values[-third:]


def _peaks(values: Sequence[float]) -> tuple[float, float]:
    """A figure's peak in the first third of the settled samples and its peak in the last."""
    first, last = _thirds(values)
    return max(first), max(last)


def _state_grew(settled: Sequence[Sample]) -> list[str]:
    """The state's rows grew by more than `FLAT`, or its files by that and `STATE_NOISE_MB`."""
    problems = []
    before, after = _peaks([sample.state_rows for sample in settled])
    if before > 0 and after > before * (1 + FLAT):
        problems.append(
            f"state grew from {before:,.0f} to {after:,.0f} rows over the last {len(settled)} "
            "samples"
        )
    before, after = _peaks([sample.state_bytes / 1e6 for sample in settled])
    if before > 0 and after > before * (1 + FLAT) and after - before > STATE_NOISE_MB:
        problems.append(
            f"state grew {(after / before - 1) * 100:.0f} % over the last {len(settled)} "
            f"samples (from {before:,.1f} to {after:,.1f} MB of files)"
        )
    return problems


def _old_batches_kept(batches: Sequence[int]) -> list[str]:
    """The checkpoints' batches grew: their fewest in the last third of the samples above their
    most in the first third (+ `FLAT`); the deletions a minute apart cannot do that."""
    first, last = _thirds(batches)
    before, after = max(first), min(last)
    if before == 0 or after <= before * (1 + FLAT):
        return []
    return [f"a checkpoint kept old batches: it held {after:,} or more, first at most {before:,}"]


def _most_grown(settled: Sequence[Sample]) -> str:
    """Which query's checkpoint grew most between the peaks (as `not_flat` takes them)."""
    grown = {}
    for query in settled[-1].checkpoints:
        sizes = [
            size.window_bytes / 1e6 if (size := sample.checkpoints.get(query)) else 0.0
            for sample in settled
        ]
        grown[query] = _peaks(sizes)
    if not grown:
        return ""
    query, (before, after) = max(grown.items(), key=lambda item: item[1][1] - item[1][0])
    return f"; most in {query}: {before:,.1f} to {after:,.1f} MB"


def settled_samples(samples: Sequence[Sample]) -> list[Sample]:
    """The samples a soak judges: its last `SETTLED_MINUTES`, or the last two thirds."""
    end = samples[-1].at_s if samples else 0.0
    since = max(end - SETTLED_MINUTES * 60, end / 3)
    return [sample for sample in samples if sample.at_s >= since]
