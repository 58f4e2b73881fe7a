"""Writing a recording: lines into numbered parts, each made durable before it is acknowledged.

A recording `--to feed.log` is written as parts `feed.00001.log`, `feed.00002.log`, … (a new
part when the current one reached `max_bytes` or is `max_seconds` old; a new run goes on after
the highest part there is, never into an existing file). A closed part is gzipped to
`feed.00001.log.gz` in the background (to a temporary file, made durable, renamed, then the
plain part removed), so a crash leaves a part plain at worst; the next run compresses it.

`commit(token)` hands what was written so far to a background thread that `fsync`s it;
`synced()` returns the tokens whose lines are on disk, in commit order. The recorder commits
each batch of messages with their packet ids and acknowledges them only once `synced()` gives
them back, so receiving never waits for the disk, and nothing acknowledged can be lost.

    writer = RecordingWriter(Path("feed.log"), Rotation(max_bytes=256_000_000))
    writer.write(message); writer.commit(["ids"])
    writer.synced()        # [["ids"]] once on disk
    writer.close()         # the last part closed and compressed
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import queue
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from statestream.errors import InputError
from statestream.ingest.recording.lines import RecordedMessage, format_line

log = logging.getLogger("statestream.recording")
PART_DIGITS = 5


@dataclass(frozen=True)
class Rotation:
    """When a part is closed and what becomes of it (None: no limit of that kind)."""

    max_bytes: int | None = 256_000_000
    max_seconds: float | None = None
    compress: bool = True


def part_path(path: Path, number: int) -> Path:
    """Part `number` of the recording `path`: `feed.log` → `feed.00001.log`."""
    return path.with_name(f"{path.stem}.{number:0{PART_DIGITS}d}{path.suffix}")


def recording_parts(path: Path) -> list[Path]:
    """The parts of the recording `path`, in order (a plain part before its `.gz` twin, which
    is then left out: an interrupted compression leaves both whole)."""
    return [part for _, part in _numbered_parts(path)]


def _numbered_parts(path: Path) -> list[tuple[int, Path]]:
    pattern = re.compile(
        rf"{re.escape(path.stem)}\.(\d{{{PART_DIGITS},}}){re.escape(path.suffix)}(\.gz)?"
    )
    if not path.parent.is_dir():
        return []
    found: dict[int, Path] = {}
    for entry in path.parent.iterdir():
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        number = int(match.group(1))
        if number not in found or not match.group(2):  # the plain one wins
            found[number] = entry
    return sorted(found.items())


class RecordingWriter:
    """Lines to the parts of `path`; durable in the background, rotated and compressed."""

    def __init__(self, path: Path, rotation: Rotation | None = None) -> None:
        self.path = path
        self.rotation = rotation or Rotation()
        self.parts: list[Path] = []  # the parts this writer opened, in order
        self.line_bytes = 0
        if path.suffix == ".gz":
            raise InputError(
                f"record to a plain name ({path.with_suffix('')}): closed parts are gzipped"
            )
        existing = _numbered_parts(path)
        self._next_number = existing[-1][0] + 1 if existing else 1
        self._handle: BinaryIO | None = None
        self._part_bytes = 0
        self._opened_at = 0.0
        self._compressor = _Compressor()
        self._syncer = _Syncer(self._compressor if self.rotation.compress else None)
        if self.rotation.compress:
            for _, leftover in existing:
                if leftover.suffix != ".gz":  # a part a crash left plain
                    self._compressor.submit(leftover)

    @property
    def current(self) -> Path | None:
        """The part being written, if one is open."""
        return self.parts[-1] if self._handle is not None else None

    def write(self, message: RecordedMessage) -> int:
        """Append the message's line (opening a part if none is open); the bytes written."""
        line = format_line(message)
        if self._handle is None:
            self._open_part()
        assert self._handle is not None
        try:
            self._handle.write(line)
        except OSError as exc:
            raise InputError(f"cannot write the recording {self.parts[-1]}: {exc}") from None
        self._part_bytes += len(line)
        self.line_bytes += len(line)
        return len(line)

    def commit(self, token: object) -> None:
        """Hand everything written so far to the disk; `synced()` returns `token` once it is."""
        if self._handle is not None:
            try:
                self._handle.flush()
            except OSError as exc:
                raise InputError(f"cannot write the recording {self.parts[-1]}: {exc}") from None
        self._syncer.submit(("sync", self._handle, token))

    def synced(self) -> list[object]:
        """The tokens whose lines are now on disk, in commit order; `InputError` when the disk
        refused them (they are then never returned, so never acknowledged)."""
        return self._syncer.done()

    def wait_synced(self, timeout_s: float = 60.0) -> list[object]:
        """Wait until every commit is on disk; the tokens not returned before."""
        self._syncer.wait_idle(timeout_s)
        return self.synced()

    def rotate_if_due(self, now: float | None = None) -> bool:
        """Close the current part when it is full or old enough (and holds lines)."""
        if self._handle is None or self._part_bytes == 0:
            return False
        rotation = self.rotation
        now = time.monotonic() if now is None else now
        full = rotation.max_bytes is not None and self._part_bytes >= rotation.max_bytes
        old = rotation.max_seconds is not None and now - self._opened_at >= rotation.max_seconds
        if full or old:
            self._close_part()
        return full or old

    def close(self, timeout_s: float = 600.0) -> None:
        """Close the current part and wait until every part is on disk and compressed."""
        if self._handle is not None:
            self._close_part()
        self._syncer.stop(timeout_s)
        self._compressor.stop(timeout_s)

    def _open_part(self) -> None:
        path = part_path(self.path, self._next_number)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._handle = open(path, "xb")  # noqa: SIM115 (the syncer thread closes it)
        except OSError as exc:
            raise InputError(f"cannot create the recording part {path}: {exc}") from None
        _sync_directory(path.parent)
        self._next_number += 1
        self._part_bytes = 0
        self._opened_at = time.monotonic()
        self.parts.append(path)

    def _close_part(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.flush()  # an error shows at the syncer's fsync
            self._syncer.submit(("close", handle, None))


def _sync_directory(directory: Path) -> None:
    """Make a directory's entries (a new or renamed file) durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class _Syncer:
    """The thread that `fsync`s committed lines and closes finished parts, in order."""

    def __init__(self, compressor: _Compressor | None) -> None:
        self._compressor = compressor
        self._queue: queue.Queue[tuple[str, BinaryIO | None, object] | None] = queue.Queue()
        self._done: list[object] = []
        self._lock = threading.Lock()
        self._error: str | None = None
        self._thread = threading.Thread(target=self._run, name="recording-sync", daemon=True)
        self._thread.start()

    def submit(self, item: tuple[str, BinaryIO | None, object]) -> None:
        self._queue.put(item)

    def done(self) -> list[object]:
        with self._lock:
            if self._error is not None:
                raise InputError(self._error)
            done, self._done = self._done, []
        return done

    def wait_idle(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        if self._queue.unfinished_tasks:
            raise InputError(f"the recording was not on disk within {timeout_s:.0f} s")

    def stop(self, timeout_s: float) -> None:
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            kind, handle, token = item
            try:
                if self._error is None:
                    self._handle(kind, handle, token)
            except OSError as exc:
                name = getattr(handle, "name", "the recording")
                with self._lock:
                    self._error = f"cannot write the recording {name} to disk: {exc}"
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _handle(self, kind: str, handle: BinaryIO | None, token: object) -> None:
        if handle is not None and not handle.closed:
            os.fsync(handle.fileno())
        if kind == "sync":
            with self._lock:
                self._done.append(token)
        elif handle is not None:  # "close": the part is whole
            handle.close()
            if self._compressor is not None:
                self._compressor.submit(Path(handle.name))


class _Compressor:
    """The thread that gzips closed parts, one after the other."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="recording-gzip", daemon=True)
        self._thread.start()

    def submit(self, path: Path) -> None:
        self._queue.put(path)

    def stop(self, timeout_s: float) -> None:
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while (path := self._queue.get()) is not None:
            try:
                compress_part(path)
            except OSError as exc:  # the plain part stays: nothing is lost
                log.warning("could not compress %s (it stays uncompressed): %s", path, exc)


def compress_part(path: Path) -> Path:
    """Gzip a closed part to `<part>.gz` durably, then remove the plain part; the `.gz` path."""
    target = path.with_name(path.name + ".gz")
    temporary = path.with_name(path.name + ".gz.tmp")
    with open(path, "rb") as source, open(temporary, "wb") as raw:
        with gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw, compresslevel=6) as out:
            shutil.copyfileobj(source, out, 1 << 20)
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(temporary, target)
    _sync_directory(path.parent)
    path.unlink()
    return target
