"""Names given as UTF-8 bytes (`Utf8Names`) get the codes their decoded names get.

`NameCodes.of_utf8` against `NameCodes` fed the same names as strings, call after call: names
of every length around the table's 8- and 16-byte words, multi-byte and NUL characters, records
picked from the buffers in any order, both Arrow offset widths, enough names to grow the table.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from statestream.join.names import NameCodes
from statestream.join.utf8_names import Utf8Names
from tests.join.test_things import PROPERTY

# lengths 0 … 26 bytes: either side of 8, 16 and 24; a few share their first 16 bytes
NAMES = ["", "a", "\x00", "ab", "é", "m1", "m2", "machine", "machine1", "machine2"]
NAMES += ["R0815-6766", "R0815-6767", "x" * 15, "x" * 16, "x" * 17, "y" * 16 + "é", "€" * 6]
NAMES += ["machine-0000-0001", "machine-0000-0002", "machine-0000-0001-a", "z" * 26]


def _buffers(names: list[str], offset_type, rng: np.random.Generator) -> Utf8Names:
    """`names` as records of a buffer that holds them in another order, with names no record
    reads and a prefix before the first (as a sliced Arrow column has)."""
    stored = [*names, "unused", "x" * 20]
    at = rng.permutation(len(stored))
    placed = [""] * len(stored)
    for k, name in enumerate(stored):
        placed[at[k]] = name
    encoded = [b"prefix"] + [name.encode() for name in placed]
    ends = np.cumsum([len(b) for b in encoded])
    offsets = np.concatenate(([len(encoded[0])], ends[1:])).astype(offset_type)
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return Utf8Names(offsets, data, at[: len(names)].astype(np.int64))


@PROPERTY
@given(
    st.lists(st.lists(st.sampled_from(NAMES), max_size=40), max_size=6),
    st.sampled_from([np.int32, np.int64]),
    st.integers(0, 2**32 - 1),
)
def test_utf8_codes_equal_those_of_the_names(batches, offset_type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    by_name, by_bytes = NameCodes(), NameCodes()
    by_bytes(["m2"])  # a name first seen as a string keeps its code when it comes as bytes
    by_name(["m2"])
    for names in batches:
        column = _buffers(names, offset_type, rng)
        assert column.decoded().tolist() == names
        assert by_bytes.of_utf8(column).tolist() == by_name(names).tolist()
    assert by_bytes.names == by_name.names


def test_many_names_grow_the_table_and_keep_their_codes() -> None:
    names = [f"thing-{k}" for k in range(5000)]
    names += [f"a-much-longer-thing-name-{k}" for k in range(5000)]
    codes = NameCodes()
    first = codes.of_utf8(Utf8Names.of(names))
    assert first.tolist() == list(range(len(names)))
    again = [*names[::-1], "new"]
    assert codes.of_utf8(Utf8Names.of(again)).tolist() == [*range(len(names))[::-1], len(names)]
    assert codes.names == [*names, "new"]


def test_take_picks_records_of_the_same_buffers() -> None:
    column = Utf8Names.of(["a", "bb", "ccc"]).take(np.array([2, 0, 2]))
    assert column.decoded().tolist() == ["ccc", "a", "ccc"]
    assert len(column) == 3
