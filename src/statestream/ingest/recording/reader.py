"""Reading recordings: plain or gzipped files of lines, one after the other.

A name that is no file but a recording's name (`feed.log`, written as `feed.00001.log.gz`, …)
stands for all its parts, in order. A file's last line without its line end is a line the
recorder was writing when it stopped: it is read when it is whole and skipped (counted in
`cut_short`) when it is not; any other line that is no recorded message is an `InputError`
naming the file and the line.

    reader = RecordingReader([Path("feed.log")])
    for message in reader.messages():
        ...
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from statestream.errors import InputError
from statestream.ingest.recording.lines import RecordedMessage, RecordingFormatError, parse_line
from statestream.ingest.recording.writer import recording_parts

GZIP_MAGIC = b"\x1f\x8b"


def recording_files(names: Sequence[Path]) -> list[Path]:
    """The files to read for `names`: each file itself, or each recording's parts in order;
    `InputError` for a name that is neither."""
    files: list[Path] = []
    for name in names:
        if name.is_file():
            files.append(name)
            continue
        parts = recording_parts(name)
        if not parts:
            raise InputError(
                f"no recording at {name}: no such file, and no parts "
                f"{name.stem}.NNNNN{name.suffix}[.gz] beside it"
            )
        files += parts
    return files


class RecordingReader:
    """The messages of recording files, file after file, line after line."""

    def __init__(self, names: Sequence[Path]) -> None:
        self.files = recording_files(names)
        self.cut_short = 0  # last lines of a file that were not whole

    def messages(self) -> Iterator[RecordedMessage]:
        """Every message, in file and line order (a new pass over the files at each call)."""
        for path in self.files:
            yield from self._file_messages(path)

    def _file_messages(self, path: Path) -> Iterator[RecordedMessage]:
        number = 0
        try:
            with _open(path) as handle:
                for number, line in enumerate(handle, 1):
                    whole = line.endswith(b"\n")
                    text = line.rstrip(b"\n").removesuffix(b"\r")
                    if not text.strip():
                        continue
                    try:
                        yield parse_line(text)
                    except RecordingFormatError as exc:
                        if whole:
                            raise InputError(
                                f"{path}:{number}: not a recorded message: {exc}"
                            ) from None
                        self.cut_short += 1
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"cannot read {path} (after line {number}): {exc}") from None


def _open(path: Path) -> IO[bytes]:
    """A recording file for reading, gzipped or not (told by its first bytes, not its name)."""
    with open(path, "rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    if compressed:
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile is one
    return open(path, "rb", buffering=1 << 20)
