"""The spec's worked examples, as written there (shared/spec/complement-join.md)."""

import pytest

from statestream.join import JoinSpec
from statestream.testing import (
    alternating,
    blocks_of_five,
    brute_force_join,
    left_first,
    run_join,
)

SPEC = JoinSpec("L", "R", "out", function="product")


@pytest.mark.parametrize("finish", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 1000])
def test_alternating_gives_every_neighbour_pair(finish: bool, batch_size: int) -> None:
    pairs = run_join(SPEC, alternating(100), batch_size, finish=finish)
    assert len(pairs) == 99
    assert set(pairs) == {(i, i + 1) if i % 2 == 0 else (i + 1, i) for i in range(99)}


@pytest.mark.parametrize("batch_size", [1, 2, 7, 1000])
@pytest.mark.parametrize("order", ["time", "left first", "right first"])
def test_blocks_of_five_without_and_with_flush(batch_size: int, order: str) -> None:
    records = blocks_of_five(20)
    if order == "left first":
        records = left_first(records)
    elif order == "right first":
        records = [r for r in records if r[0] == "right"] + [r for r in records if r[0] == "left"]
    index = {(side, t): i for i, (side, t, _) in enumerate(records)}

    def pair(lt: int, rt: int) -> tuple[int, int]:
        return index["left", lt * 1000.0], index["right", rt * 1000.0]

    without = run_join(SPEC, records, batch_size, finish=False)
    with_flush = run_join(SPEC, records, batch_size, finish=True)
    assert len(without) == 23
    assert len(with_flush) == 27
    pending = {pair(14, 16), pair(14, 17), pair(14, 18), pair(14, 19)}
    assert set(with_flush) - set(without) == pending


@pytest.mark.parametrize("batch_size", [10_000, 100_000])  # 100,000 is joined in pieces
def test_hundred_thousand_in_blocks_of_five(batch_size: int) -> None:
    records = blocks_of_five(100_000)
    without = run_join(SPEC, records, batch_size, finish=False)
    assert len(without) == len(set(without)) == 179_987
    assert len(run_join(SPEC, records, batch_size, finish=True)) == 179_991


def test_tolerance_filters_and_does_not_search_farther() -> None:
    spec = JoinSpec("L", "R", "out", function="product", tolerance=3)
    records = blocks_of_five(20)
    pairs = run_join(spec, records, 4, finish=True)
    assert len(pairs) == 15
    assert all(abs(records[li][1] - records[ri][1]) <= 3000 for li, ri in pairs)
    assert not any(li == 0 for li, _ in pairs)  # L@0's only complement, R@5, is 5 s away
    assert set(pairs) == brute_force_join(spec, records, finish=True)
