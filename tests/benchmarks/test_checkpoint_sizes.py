"""Checkpoint sizes: bytes on disk over time, and the sizes a third of the way through."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.checkpoint_sizes import CheckpointSizes, folder_bytes, thirds


def test_folder_bytes_counts_every_file_below(tmp_path: Path) -> None:
    (tmp_path / "state" / "0").mkdir(parents=True)
    (tmp_path / "offsets").mkdir()
    (tmp_path / "state" / "0" / "1.changelog").write_bytes(b"x" * 300)
    (tmp_path / "offsets" / "0").write_bytes(b"y" * 45)
    assert folder_bytes(tmp_path) == 345
    assert folder_bytes(tmp_path / "missing") == 0


def test_samples_follow_the_folder_as_it_changes(tmp_path: Path) -> None:
    with CheckpointSizes(tmp_path, every_s=0.05) as sizes:
        (tmp_path / "a").write_bytes(b"x" * 100)
        time.sleep(0.3)
        (tmp_path / "a").unlink()
        (tmp_path / "b").write_bytes(b"x" * 10)
        time.sleep(0.3)
    seen = [size for _, size in sizes.samples]
    assert 100 in seen
    assert seen[-1] == 10
    assert [at for at, _ in sizes.samples] == sorted(at for at, _ in sizes.samples)


def test_thirds_are_the_median_sizes_of_each_third() -> None:
    samples = [(0.0, 5), (5.0, 7), (8.0, 100), (10.0, 9), (15.0, 9), (25.0, 1), (28.0, 3)]
    samples.append((30.0, 2))
    assert thirds(samples) == [7, 9, 2]
    assert thirds([(0.0, 4)]) == [0, 0, 4]
    assert thirds([]) == []
