"""A checkpoint's size as a soak reads it: the files of the batches Spark keeps, and how many."""

from __future__ import annotations

from pathlib import Path

from statestream.chaos.checkpoints import CheckpointSize, checkpoint_size, checkpoint_sizes


def _file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def _query(folder: Path, oldest_state: int, newest: int) -> None:
    """A query's checkpoint as PySpark 4.1 leaves it (RocksDB, changelog checkpointing): logs
    purged to the newest 100 batches, state versions (batch + 1) back to an older snapshot."""
    _file(folder / "metadata", 50)
    _file(folder / "sources" / "0" / "0", 70)
    _file(folder / "statestream-windows.json", 30)
    for batch in range(max(0, newest - 99), newest + 1):
        _file(folder / "offsets" / str(batch), 300)
        _file(folder / "commits" / str(batch), 40)
    for partition in ("0", "1"):
        state = folder / "state" / "0" / partition
        _file(state / "SSTs" / "000022-8c5cfb3b.sst", 1_000)
        for version in range(oldest_state, newest + 2):
            _file(state / f"{version}.changelog", 1_000)
            _file(state / f"{version}.changelog.crc", 10)
        for version in range(oldest_state, newest + 2, 40):
            _file(state / f"{version}.zip", 500)
        _file(state / "_metadata" / "metadata", 20)


def test_the_window_holds_the_newest_batches_and_every_file_of_no_batch(tmp_path: Path) -> None:
    _query(tmp_path / "join", oldest_state=121, newest=272)
    size = checkpoint_size(tmp_path / "join")
    assert size.batches == 272 - 120 + 1  # state version 121 holds batch 120
    per_batch = 300 + 40 + 2 * (1_000 + 10)  # logs, and a changelog per partition
    snapshots = 2 * 500 * len([v for v in range(121, 274, 40) if v - 1 > 172])
    no_batch = 50 + 70 + 30 + 2 * (1_000 + 20)
    assert size.window_bytes == 100 * per_batch + snapshots + no_batch
    assert size.bytes > size.window_bytes


def test_deleting_old_versions_shrinks_the_size_but_not_the_window(tmp_path: Path) -> None:
    _query(tmp_path / "before" / "join", oldest_state=121, newest=272)
    _query(tmp_path / "after" / "join", oldest_state=161, newest=272)  # maintenance ran
    before = checkpoint_size(tmp_path / "before" / "join")
    after = checkpoint_size(tmp_path / "after" / "join")
    assert after.window_bytes == before.window_bytes
    assert after.bytes < before.bytes
    assert after.batches == before.batches - 40


def test_each_querys_checkpoint_is_sized(tmp_path: Path) -> None:
    _query(tmp_path / "join", oldest_state=1, newest=20)
    (tmp_path / "sink_influx" / "offsets").mkdir(parents=True)
    (tmp_path / "sink_influx" / "offsets" / "0").write_text("v1")
    sizes = checkpoint_sizes(tmp_path)
    assert sorted(sizes) == ["join", "sink_influx"]
    assert sizes["join"].batches == 21  # batches 0 to 20, all kept
    assert sizes["join"].window_bytes == sizes["join"].bytes
    assert sizes["sink_influx"] == CheckpointSize(bytes=2, window_bytes=2, batches=1)
    assert checkpoint_sizes(tmp_path / "none") == {}
