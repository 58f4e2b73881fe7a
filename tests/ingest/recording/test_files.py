"""A recording on disk: numbered parts, rotated by size and time, gzipped once closed (also
those a crash left plain), made durable before their tokens come back, and read back in order,
plain or gzipped, with a last line cut short skipped and any other bad line named."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from statestream.errors import InputError
from statestream.ingest.recording import (
    RecordedMessage,
    RecordingReader,
    RecordingWriter,
    Rotation,
    format_line,
    recording_files,
    recording_parts,
)

T = 1_795_587_330_000_000


def _messages(count: int, start: int = 0) -> list[RecordedMessage]:
    return [
        RecordedMessage(T + i * 1000, f"/hfp/v2/a b/{i}", b'{"VP":{"n":%d}}' % i)
        for i in range(start, start + count)
    ]


def _write(writer: RecordingWriter, messages: list[RecordedMessage]) -> None:
    for message in messages:
        writer.write(message)
        writer.commit(message.received_us)
        writer.rotate_if_due()


def test_parts_rotate_by_size_are_gzipped_once_closed_and_read_back_in_order(
    tmp_path: Path,
) -> None:
    line_bytes = len(format_line(_messages(1)[0]))
    writer = RecordingWriter(tmp_path / "feed.log", Rotation(max_bytes=3 * line_bytes))
    messages = _messages(10)
    _write(writer, messages)
    assert writer.current == tmp_path / "feed.00004.log"  # 3 + 3 + 3 + 1
    writer.close()
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [f"feed.0000{n}.log.gz" for n in range(1, 5)]
    assert gzip.decompress((tmp_path / "feed.00001.log.gz").read_bytes()).count(b"\n") == 3
    assert list(RecordingReader([tmp_path / "feed.log"]).messages()) == messages


def test_parts_rotate_by_time_only_when_they_hold_lines(tmp_path: Path) -> None:
    writer = RecordingWriter(
        tmp_path / "feed.log", Rotation(max_bytes=None, max_seconds=60, compress=False)
    )
    assert not writer.rotate_if_due(now=1e12)  # nothing open
    writer.write(_messages(1)[0])
    assert not writer.rotate_if_due()
    assert writer.rotate_if_due(now=1e12)
    assert writer.current is None and not writer.rotate_if_due(now=2e12)
    writer.write(_messages(1, 1)[0])
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["feed.00001.log", "feed.00002.log"]


def test_tokens_come_back_in_commit_order_once_on_disk(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path / "feed.log", Rotation(max_bytes=200, compress=False))
    _write(writer, _messages(20))
    tokens = writer.wait_synced()
    assert tokens == [m.received_us for m in _messages(20)]
    assert writer.synced() == []
    on_disk = b"".join(path.read_bytes() for path in sorted(tmp_path.glob("feed.*.log")))
    assert on_disk.count(b"\n") == 20
    writer.close()


def test_a_new_run_goes_on_after_the_last_part_and_compresses_what_a_crash_left_plain(
    tmp_path: Path,
) -> None:
    first = RecordingWriter(tmp_path / "feed.log", Rotation(compress=False))
    _write(first, _messages(3))
    first.close()  # as a crash would leave it: plain
    second = RecordingWriter(tmp_path / "feed.log")
    _write(second, _messages(2, 3))
    second.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["feed.00001.log.gz", "feed.00002.log.gz"]
    assert list(RecordingReader([tmp_path / "feed.log"]).messages()) == _messages(5)


def test_a_recording_without_suffix_and_one_named_gz(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path / "feed", Rotation(compress=False))
    _write(writer, _messages(1))
    writer.close()
    assert recording_parts(tmp_path / "feed") == [tmp_path / "feed.00001"]
    with pytest.raises(InputError, match="plain name"):
        RecordingWriter(tmp_path / "feed.log.gz")


def test_a_plain_part_and_its_gz_twin_are_read_once(tmp_path: Path) -> None:
    plain = tmp_path / "feed.00001.log"
    plain.write_bytes(b"".join(format_line(m) for m in _messages(2)))
    (tmp_path / "feed.00001.log.gz").write_bytes(gzip.compress(plain.read_bytes()))
    assert recording_files([tmp_path / "feed.log"]) == [plain]


def test_files_are_read_one_after_the_other_whatever_their_names(tmp_path: Path) -> None:
    first, second = tmp_path / "b.txt", tmp_path / "a.dump"
    first.write_bytes(b"".join(format_line(m) for m in _messages(2)))
    second.write_bytes(gzip.compress(b"".join(format_line(m) for m in _messages(2, 2))))
    assert list(RecordingReader([first, second]).messages()) == _messages(4)


def test_a_last_line_cut_short_is_skipped_and_crlf_and_blank_lines_are_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dump.txt"
    whole = [format_line(m) for m in _messages(2)]
    path.write_bytes(whole[0].replace(b"\n", b"\r\n") + b"\n" + whole[1] + b"2026-11-25T06:1")
    reader = RecordingReader([path])
    assert list(reader.messages()) == _messages(2)
    assert reader.cut_short == 1


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "dump.txt"
    path.write_bytes(format_line(_messages(1)[0]) + b"not a message\n")
    with pytest.raises(InputError, match=r"dump.txt:2: not a recorded message"):
        list(RecordingReader([path]).messages())


def test_a_missing_recording_says_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no recording at .*feed.log.*feed.NNNNN.log\[.gz\]"):
        RecordingReader([tmp_path / "feed.log"])
