"""The column helpers of the engine of many things against plain definitions.

Name codes, the split of records by side, grouping by thing, the merge of rows in thing order,
the neighbour lookups and the merge sort of a thing's records are faster forms of a dict, a
selection, a stable sort, a count and a sort (several are compiled loops); each must give
exactly what its plain form gives.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.join.keys import Groups, sided_rows
from statestream.join.names import NameCodes
from statestream.join.router import JoinRouter
from statestream.join.spec import JoinSpec
from statestream.join.table import Rows
from statestream.join.things_emission import _advance
from statestream.join.things_series import _sort


def test_codes_are_given_in_order_of_first_sight_across_calls() -> None:
    codes = NameCodes()
    assert codes(["b", "a", "b"]).tolist() == [0, 1, 0]
    assert codes(["a"]).tolist() == [1]
    assert codes(["c", "a", "d", "c"]).tolist() == [2, 1, 3, 2]
    assert codes([]).tolist() == []
    assert codes.names == ["b", "a", "c", "d"]


@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12), max_size=6))
def test_codes_equal_a_dict_filled_in_order(batches: list[list[str]]) -> None:
    codes, expected = NameCodes(), {}
    for names in batches:
        got = codes(names).tolist()
        assert got == [expected.setdefault(n, len(expected)) for n in names]
    assert codes.names == list(expected)


def test_one_spec_sides_leave_other_quantities_out() -> None:
    router = JoinRouter([JoinSpec("speed", "torque", "power", function="product")])
    quantities = np.array(["speed", "noise", "torque", "torque", "speed", None], dtype=object)
    ((is_left, is_right),) = router._sides(quantities)
    assert is_left.tolist() == [True, False, False, False, True, False]
    assert is_right.tolist() == [False, False, True, True, False, False]


@given(
    st.lists(st.integers(0, 9), max_size=30),
    st.sampled_from([0, 5_000, 1 << 20, 1 << 40]),  # counted, or sorted by radix for wide codes
)
def test_groups_equal_a_stable_sort_by_code(codes: list[int], spread: int) -> None:
    column = np.array(codes, dtype=np.int64) * (spread + 1)
    groups = Groups.of(column)
    order = np.argsort(column, kind="stable")
    assert groups.order.tolist() == order.tolist()
    distinct, starts, sizes = np.unique(column[order], return_index=True, return_counts=True)
    assert groups.codes.tolist() == distinct.tolist()
    assert groups.starts.tolist() == starts.tolist()
    assert groups.sizes.tolist() == sizes.tolist()


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), max_size=40),
    st.lists(st.sampled_from([0, 1, -1]), min_size=3, max_size=3),
    st.booleans(),
    st.sampled_from([1, 10**6]),
)
def test_sided_rows_equal_a_split_by_side(
    records, sides: list[int], with_pos: bool, spread: int
) -> None:
    """Each side's records in thing order, each thing's in arrival order, with their groups,
    from read-only columns (as Arrow gives them); thing codes close together, or spread far
    beyond the records (a router that has seen many more things)."""
    things = np.array([r[0] for r in records], dtype=np.int32)
    quantities = np.array([r[1] for r in records], dtype=np.int32)
    thing_of_name = np.array([40, 30, 20, 10, 0], dtype=np.int64) * spread
    side_of_name = np.array(sides, dtype=np.int8)
    t, v = np.arange(len(records)) * 1.5, np.arange(len(records)) * -2.0
    pos = np.arange(len(records), dtype=np.int64) + 100 if with_pos else None
    for column in (things, quantities, t, v):
        column.flags.writeable = False
    got = sided_rows(things, thing_of_name, quantities, side_of_name, t, v, pos)
    for side, ((rows, thing, t_side, v_side, pos_side), groups) in enumerate(got):
        of_side = np.flatnonzero(side_of_name[quantities] == side)
        expected = of_side[np.argsort(thing_of_name[things[of_side]], kind="stable")]
        assert rows.tolist() == expected.tolist()
        assert thing.tolist() == thing_of_name[things[expected]].tolist()
        assert t_side.tolist() == t[expected].tolist()
        assert v_side.tolist() == v[expected].tolist()
        assert pos_side.tolist() == (expected if pos is None else pos[expected]).tolist()
        for name in ("order", "codes", "starts", "sizes"):
            assert getattr(groups, name).tolist() == getattr(Groups.of(thing), name).tolist()


@st.composite
def sorted_rows(draw: st.DrawFn) -> Rows:
    things = np.sort(np.array(draw(st.lists(st.integers(0, 6), max_size=15)), dtype=np.int64))
    n = len(things)
    return Rows(things, np.arange(n) * 1.5, np.arange(n) * 2.0, np.arange(n, dtype=np.int64))


@given(sorted_rows(), sorted_rows())
def test_merged_from_equals_a_stable_sort_by_thing(a: Rows, b: Rows) -> None:
    both = Rows.concat([a, b])
    order = np.argsort(both.thing, kind="stable")
    merged, from_b = a.merged_from(b)
    at = np.flatnonzero(from_b)
    assert len(from_b) == len(merged)
    for name in ("thing", "t", "v", "pos"):
        assert getattr(merged, name).tolist() == getattr(both, name)[order].tolist()
    assert at.tolist() == np.flatnonzero(order >= len(a)).tolist()
    assert merged.thing[at].tolist() == b.thing.tolist()


def test_rows_of_other_number_types_take_the_compiled_loops_types() -> None:
    rows = Rows(
        np.array([0, 1], np.int32), np.array([5, 3]), np.array([1.5, 2.5], np.float32),
        np.array([7, 8], np.int16),
    )  # fmt: skip
    assert [c.dtype for c in rows.columns] == [np.int64, np.float64, np.float64, np.int64]
    merged = Rows(np.array([0]), np.array([1.0]), np.array([0.5]), np.array([9])).merged(rows)
    assert merged.pos.tolist() == [9, 7, 8]  # thing 0: the first set's row first
    assert rows.take(np.array([1, 0])).t.tolist() == [3.0, 5.0]


def test_take_with_a_mask_equals_take_at_its_positions() -> None:
    rows = Rows(np.array([0, 0, 1, 2]), np.arange(4.0), np.arange(4.0) * 2, np.arange(4))
    mask = np.array([True, False, False, True])
    taken = rows.take(mask)
    for name in ("thing", "t", "v", "pos"):
        assert getattr(taken, name).tolist() == getattr(rows, name)[[0, 3]].tolist()


keys = st.lists(st.integers(0, 12), min_size=1, max_size=20).map(
    lambda k: np.sort(np.array(k, dtype=np.int64))
)


def _walk(ka: np.ndarray, kb: np.ndarray) -> tuple[list[int], list[int]]:
    """Per key of `ka`, what the emission kernels take for its neighbours in `kb`: the first
    index at or above it and the last at or below it."""
    first, last, below, up_to = [], [], 0, 0
    for key in ka:
        below, up_to = _advance(kb, len(kb), key, below, up_to)
        first.append(below)
        last.append(up_to - 1)
    return first, last


@settings(deadline=None)  # the step is compiled for Python's calls on the first one
@given(keys, keys)
def test_neighbours_count_keys_with_and_without_ties(kl: np.ndarray, kr: np.ndarray) -> None:
    (next_r, prev_r), (next_l, prev_l) = _walk(kl, kr), _walk(kr, kl)
    assert next_r == [int((kr < k).sum()) for k in kl]  # first R key ≥ l
    assert prev_r == [int((kr <= k).sum()) - 1 for k in kl]  # last R key ≤ l
    assert next_l == [int((kl < k).sum()) for k in kr]
    assert prev_l == [int((kl <= k).sum()) - 1 for k in kr]


@settings(deadline=None)  # compiled for Python's calls on the first one
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, -0.0, 1.0, 2.5]), st.sampled_from([0.0, 1.0])), max_size=40
    ),
    st.integers(0, 5),
    st.booleans(),
)
def test_sort_is_stable_by_time_then_value(records, lo: int, by_value: bool) -> None:
    """`things_pass._sort` (the merge sort of a thing's records that may repeat one or arrived
    out of order) equals numpy's stable sort, -0.0 equal to 0.0."""
    t = np.array([r[0] for r in records], dtype=np.float64)
    v = np.array([r[1] for r in records], dtype=np.float64)
    lo = min(lo, len(t))
    index, spare = np.full(len(t), -1, dtype=np.int64), np.empty(len(t), dtype=np.int64)
    _sort(index, spare, lo, len(t), t, v, by_value)
    keys = (v[lo:], t[lo:]) if by_value else (t[lo:],)
    assert index[lo:].tolist() == (lo + np.lexsort(keys)).tolist()
    assert (index[:lo] == -1).all()
