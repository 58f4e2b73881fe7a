"""Names coded from their UTF-8 bytes (`NameCodes.of_utf8`, its compiled `NameIndex`) get the
codes names given one by one get, across batches and mixed with names added the other ways."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.join.name_index import NameIndex, words_of
from statestream.join.names import NameCodes, Utf8Names

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# names that agree in their first or last 8 bytes, or in all but a middle byte; short ones,
# empty ones, multi-byte and NUL characters: what a word-wise comparison could get wrong
TRICKY = ["", "\x00", "a", "ab", "a\x00", "\x00a", "é", "abcdefgh", "abcdefghi", "bbcdefghi"]
TRICKY += ["abcdefghXabcdefgh", "abcdefghYabcdefgh", "abcdefgh" * 3, "abcdefgh" * 3 + "x"]
TRICKY += ["abcdefghabcdefgXabcdefgh", "R27182-2659", "R27182-2658", "R0815-9848", "abcdefg"]
NAMES = st.one_of(st.sampled_from(TRICKY), st.text(max_size=40))


def _column(names: list[str], rng: np.random.Generator) -> Utf8Names:
    """`names` as bytes in a buffer with bytes before, between and after them, in any order."""
    gap = [rng.integers(0, 256, size=rng.integers(0, 4), dtype=np.uint8) for _ in names]
    encoded = [np.frombuffer(name.encode(), np.uint8) for name in names]
    parts = [rng.integers(0, 256, size=rng.integers(0, 9), dtype=np.uint8)]
    starts, ends, at = [], [], len(parts[0])
    for before, name in zip(gap, encoded, strict=True):
        at += len(before)
        starts.append(at)
        at += len(name)
        ends.append(at)
        parts += [before, name]
    parts.append(rng.integers(0, 256, size=rng.integers(0, 9), dtype=np.uint8))
    data = np.concatenate(parts)
    data.setflags(write=False)  # as Arrow's buffers are
    return Utf8Names(np.array(starts, np.int64), np.array(ends, np.int64), data)


@PROPERTY
@given(
    st.lists(
        st.tuples(st.lists(NAMES, max_size=60), st.sampled_from(["bytes", "bytes", "names"])),
        max_size=6,
    ),
    st.integers(0, 2**32 - 1),
)
def test_codes_of_bytes_equal_those_of_names(batches, seed: int) -> None:
    """Batches by bytes, some by names in between (the index takes those in before its next
    batch): every batch's codes and the names in the end are those of names alone."""
    rng = np.random.default_rng(seed)
    by_bytes, by_name = NameCodes(), NameCodes()
    for names, way in batches:
        expected = by_name(names).tolist()
        if way == "bytes":
            column = _column(names, rng)
            assert column.decoded().tolist() == names
            assert by_bytes.of_utf8(column).tolist() == expected
        else:
            assert by_bytes(names).tolist() == expected
    assert by_bytes.names == by_name.names
    assert by_bytes.codes == by_name.codes


def test_a_full_table_grows_and_keeps_every_code() -> None:
    """Thousands of names, short and long, one batch then again shuffled: the table, the words
    kept for long names and the codes' places grow several times."""
    names = [f"machine-{k}" + "-spindle" * (k % 5) for k in range(5000)]
    index = NameIndex()
    codes, new = index.codes(Utf8Names.of(names + names[::-1]))
    assert new == names
    assert codes.tolist() == list(range(5000)) + list(range(4999, -1, -1))
    order = np.random.default_rng(1).permutation(5000)
    codes, new = index.codes(Utf8Names.of([names[k] for k in order.tolist()]))
    assert new == [] and codes.tolist() == order.tolist() and len(index) == 5000


def test_names_not_strings_turn_the_index_off() -> None:
    """A name that is no string has no bytes: from then on the names are decoded."""
    codes = NameCodes()
    assert codes.of_utf8(Utf8Names.of(["m1", "m2"])).tolist() == [0, 1]
    assert codes([7, "m2"]).tolist() == [2, 1]
    assert codes.of_utf8(Utf8Names.of(["m3", "m1", "7"])).tolist() == [3, 0, 4]
    assert codes.names == ["m1", "m2", 7, "m3", "7"]


def test_words_are_the_bytes_from_each_position() -> None:
    data = np.arange(1, 11, dtype=np.uint8)
    words = words_of(data)
    assert len(words) == 3 and not words.flags.owndata
    assert words[2] == int.from_bytes(bytes(range(3, 11)), "little")
    assert len(words_of(np.arange(5, dtype=np.uint8))) == 0


def test_a_failed_call_leaves_no_name_behind() -> None:
    """Bytes that are no UTF-8 fail the call; the index is then built anew from the names, so
    a name it took in that call gets no code of its own."""
    codes = NameCodes()
    assert codes.of_utf8(Utf8Names.of(["m1"])).tolist() == [0]
    bad = Utf8Names(np.array([0, 2]), np.array([2, 4]), np.frombuffer(b"m2\xff\xfe", np.uint8))
    with pytest.raises(UnicodeDecodeError):
        codes.of_utf8(bad)
    assert codes.of_utf8(Utf8Names.of(["m3", "m2", "m1"])).tolist() == [1, 2, 0]
    assert codes.names == ["m1", "m3", "m2"]
