"""Names given as codes (`CodedNames`) or as bytes (`Utf8Names`) join exactly as names given one
by one.

The same records through two routers, one fed names, one fed codes into a dictionary in any
order and with names no record has: the same steps, the same codes for the same things, the same
pairs by spec and the same states.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statestream.join import CodedNames, JoinRouter, JoinSpec, export_state
from statestream.join.names import NameCodes, Utf8Names
from tests.join.test_things import PROPERTY, _columns, assert_same_steps, cases

PAIR_FIELDS = ("left_t", "left_v", "left_pos", "right_t", "right_v", "right_pos", "result")


def _coded(names: np.ndarray, rng: np.random.Generator, unused: bool = True) -> CodedNames:
    """`names` as codes into a shuffled dictionary that has an unused name too, if `unused`."""
    dictionary = sorted({str(n) for n in names.tolist()} | ({"unused"} if unused else set()))
    rng.shuffle(dictionary)
    index = {name: k for k, name in enumerate(dictionary)}
    return CodedNames(np.array([index[n] for n in names.tolist()], dtype=np.int32), dictionary)


def _same_output(got, expected) -> None:
    assert_same_steps(got, expected)
    assert got.names == expected.names
    by_spec = [list(s.pairs_by_spec(codes=True)) for s in (got, expected)]
    assert len(by_spec[0]) == len(by_spec[1])
    for (spec_g, thing_g, pairs_g), (spec_e, thing_e, pairs_e) in zip(*by_spec, strict=True):
        assert spec_g == spec_e
        np.testing.assert_array_equal(thing_g, thing_e)
        for f in PAIR_FIELDS:
            np.testing.assert_array_equal(getattr(pairs_g, f), getattr(pairs_e, f))


@PROPERTY
@given(cases(), st.integers(0, 2**32 - 1), st.booleans())
def test_coded_names_join_as_names(case, seed: int, unused_quantity: bool) -> None:
    """Without an unused quantity name, a batch whose quantities are all of a spec takes the
    router's compiled split (`keys.sided_rows`); others take the general way."""
    specs, records, splits = case
    rng = np.random.default_rng(seed)
    by_name, by_code, by_bytes = JoinRouter(specs), JoinRouter(specs), JoinRouter(specs)
    start, k = 0, 0
    while start < len(records):
        end = start + splits[k % len(splits)]
        things, quantities, t, v, pos = _columns(records, start, end)
        expected = by_name.process(things, quantities, t, v, pos)
        coded_quantities = _coded(quantities, rng, unused_quantity)
        got = by_code.process(_coded(things, rng), coded_quantities, t, v, pos)
        _same_output(got, expected)
        as_bytes = Utf8Names.of([str(thing) for thing in things.tolist()])
        _same_output(by_bytes.process(as_bytes, coded_quantities, t, v, pos), expected)
        start, k = end, k + 1
    expected = by_name.finish()
    _same_output(by_code.finish(), expected)
    _same_output(by_bytes.finish(), expected)
    states = [(key, export_state(e)) for key, e in by_name.engines.items()]
    for router in (by_code, by_bytes):
        assert [(key, export_state(e)) for key, e in router.engines.items()] == states


@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12), max_size=6))
def test_codes_of_a_coded_column_equal_those_of_its_names(batches: list[list[str]]) -> None:
    by_name, by_code = NameCodes(), NameCodes()
    for names in batches:
        dictionary = sorted(set(names) | {"z"}, reverse=True)
        column = CodedNames(np.array([dictionary.index(n) for n in names]), dictionary)
        assert by_code.of(column).tolist() == by_name(names).tolist()
        assert column.decoded().tolist() == names
    assert by_code.names == by_name.names


@pytest.mark.parametrize("codes", [[0, -1], [0, 2]])
def test_a_code_outside_the_names_is_refused(codes: list[int]) -> None:
    with pytest.raises(ValueError, match="must index"):
        CodedNames(np.array(codes), ["m1", "m2"])


@PROPERTY
@given(st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=40), max_size=5))
def test_names_in_order_of_first_record_are_coded_as_any_others(batches) -> None:
    """`first_seen` names (in order of first record, each used) take the short way for new
    names; the codes and the table's names are those of the search for first records."""
    short, searched = NameCodes(), NameCodes()
    for batch in batches:
        names = list(dict.fromkeys(batch))
        codes = np.array([names.index(n) for n in batch], dtype=np.int32)
        got = short.of(CodedNames(codes, names, first_seen=True))
        expected = searched.of(CodedNames(codes, names))
        np.testing.assert_array_equal(got, expected)
        assert short.names == searched.names


def test_a_router_that_knows_far_more_things_than_a_batch_holds_joins_as_by_name() -> None:
    """3,000 things in a first batch, then batches of a few records: the split names only
    the batch's things (not a table of every thing the router knows) and joins the same."""
    spec = JoinSpec("speed", "torque", "power", function="product")
    first = [(f"m{k}", "speed" if k % 2 else "torque", float(k), 1.0) for k in range(3000)]
    later = [
        (f"m{k % 7 * 400}", "speed" if k % 3 else "torque", 3000.0 + k, 2.0) for k in range(60)
    ]
    by_name, by_bytes = JoinRouter([spec]), JoinRouter([spec])
    for batch in (first, *(later[k : k + 6] for k in range(0, len(later), 6))):
        things, quantities, t, v = (np.array(column) for column in zip(*batch, strict=True))
        quantities = CodedNames(*np.unique(quantities, return_inverse=True)[::-1])
        expected = by_name.process(things.astype(object), quantities, t, v)
        got = by_bytes.process(Utf8Names.of(things.tolist()), quantities, t, v)
        _same_output(got, expected)
    _same_output(by_bytes.finish(), by_name.finish())
