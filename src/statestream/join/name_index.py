"""A compiled hash index from names, as UTF-8 bytes, to their codes: a batch of strings as Arrow
keeps them (`Utf8Names`) is coded in one pass over its bytes, with no Python string per record.

Arrow's `dictionary_encode` hashes the same bytes, but then each batch's distinct names become
Python strings and are looked up in a dict: with thousands of things a batch, that is slower
than this index, which keeps the names it has seen across batches.

The table is open addressing with linear probing, at most half full. A slot holds a name's
hash, its length and code, and its first and last 8 bytes, read as little-endian integers from
a stride-1 view of the bytes (`words_of`): a name of up to 16 bytes is compared within its slot,
a longer one's middle words against a copy kept aside.

    >>> index = NameIndex()
    >>> codes, new = index.codes(Utf8Names.of(["m2", "a-rather-long-machine-name", "m2"]))
    >>> codes.tolist(), new
    ([0, 1, 0], ['m2', 'a-rather-long-machine-name'])
    >>> codes, new = index.codes(Utf8Names.of(["m3", "a-rather-long-machine-name"]))
    >>> codes.tolist(), new
    ([2, 1], ['m3'])
"""

from __future__ import annotations

import numpy as np
from numba import types

from statestream.join.compiled import kernel, step, thing_step
from statestream.join.names import Utf8Names, decoded_names

_HASH, _CODE, _FIRST, _LAST = range(4)  # a slot's fields; _CODE is length << 32 | code
_EMPTY = -1  # the _CODE of an empty slot
_LOW = (1 << 32) - 1
_MULTIPLY = np.uint64(0x9E3779B97F4A7C15)
_SEED = np.uint64(0xC2B2AE3D27D4EB4F)
_MIX1, _MIX2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_SHIFT = np.uint64(33)


def words_of(data: np.ndarray) -> np.ndarray:
    """The 8 bytes from each byte of `data` on (those with 8 bytes left), as little-endian
    unsigned integers: a view of `data` with a stride of one byte, nothing copied."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    return np.ndarray((max(len(data) - 7, 0),), dtype=np.uint64, buffer=data, strides=(1,))


@step
def _mixed(h):
    """MurmurHash3's 64-bit finalizer: every bit of `h` moves every bit of the result."""
    h ^= h >> _SHIFT
    h *= _MIX1
    h ^= h >> _SHIFT
    h *= _MIX2
    return h ^ (h >> _SHIFT)


@step
def _short_word(words, data, end, length):
    """A name of fewer than 8 bytes ending at `end`, in the low bytes of a word."""
    if length == 0:
        return np.uint64(0)
    if end >= 8:
        return words[end - 8] >> np.uint64(64 - 8 * length)
    word = np.uint64(0)
    for k in range(length):
        word |= np.uint64(data[end - length + k]) << np.uint64(8 * k)
    return word


@step
def _hash(words, data, start, end):
    """The hash of the name at bytes `start` … `end`: its length, its words, its last word."""
    length = end - start
    h = np.uint64(length) * _SEED
    if length < 8:
        return _mixed(h ^ _short_word(words, data, end, length))
    at = start
    while at + 8 < end:
        h = (h ^ words[at]) * _MULTIPLY
        at += 8
    return _mixed(h ^ (words[end - 8] * _MULTIPLY))


@step
def _ends(words, data, start, end):
    """A name's first and last words as its slot keeps them (the short word and 0 for a name of
    fewer than 8 bytes)."""
    if end - start < 8:
        return np.int64(_short_word(words, data, end, end - start)), np.int64(0)
    return np.int64(words[start]), np.int64(words[end - 8])


@step
def _same_middle(words, start, end, middles, at):
    """Whether a name's words between its first and last are those kept from `at` on."""
    for k, word_at in enumerate(range(start + 8, end - 8, 8)):
        if np.int64(words[word_at]) != middles[at + k]:
            return False
    return True


@thing_step
def _code_from(i, starts, ends, data, words, table, middles, middle_at, state, codes, firsts):
    """Code records `i` on, inserting new names, until done or the table, `middles` or
    `middle_at` is full; returns the first record not coded. `state`: the names coded, the
    middle words kept and the new names of this batch (updated here)."""
    mask = len(table) - 1
    count, kept, new = state[0], state[1], state[2]
    while i < len(starts):
        start, end = starts[i], ends[i]
        length = end - start
        h = np.int64(_hash(words, data, start, end))
        first, last = _ends(words, data, start, end)
        slot = h & mask
        while True:
            held = table[slot, _CODE]
            if held == _EMPTY:
                break
            if (
                table[slot, _HASH] == h
                and held >> 32 == length
                and table[slot, _FIRST] == first
                and table[slot, _LAST] == last
                and (
                    length <= 16 or _same_middle(words, start, end, middles, middle_at[held & _LOW])
                )
            ):
                break
            slot = (slot + 1) & mask
        if held == _EMPTY:
            n_middle = max(0, (length - 9) // 8)  # words between first and last
            if (
                2 * (count + 1) > len(table)
                or count == len(middle_at)
                or kept + n_middle > len(middles)
            ):
                break
            held = (length << 32) | count
            table[slot, _HASH], table[slot, _CODE] = h, held
            table[slot, _FIRST], table[slot, _LAST] = first, last
            middle_at[count] = kept
            for k, word_at in enumerate(range(start + 8, end - 8, 8)):
                middles[kept + k] = np.int64(words[word_at])
            kept += n_middle
            firsts[new] = i
            new += 1
            count += 1
        codes[i] = held & _LOW
        i += 1
    state[0], state[1], state[2] = count, kept, new
    return i


@step
def _rehashed(table, size):
    """The table's names in a new table of `size` slots."""
    grown = np.full((size, 4), _EMPTY, np.int64)
    mask = size - 1
    for old in range(len(table)):
        if table[old, _CODE] != _EMPTY:
            slot = table[old, _HASH] & mask
            while grown[slot, _CODE] != _EMPTY:
                slot = (slot + 1) & mask
            grown[slot] = table[old]
    return grown


@step
def _doubled(column):
    """`column` in an array twice as long."""
    grown = np.empty(2 * len(column), column.dtype)
    grown[: len(column)] = column
    return grown


_POSITIONS = types.Array(types.int64, 1, "C", readonly=True)
_BYTES = types.Array(types.uint8, 1, "C", readonly=True)
_WORDS = types.Array(types.uint64, 1, "A", readonly=True)
_TABLE = types.Array(types.int64, 2, "C")
_COLUMN = types.Array(types.int64, 1, "C")


@kernel(_POSITIONS, _POSITIONS, _BYTES, _WORDS, _TABLE, _COLUMN, _COLUMN, _COLUMN)
def _coded(starts, ends, data, words, table, middles, middle_at, state):
    """Each record's code and the first record of each new name (in order of first sight); the
    table, `middles` and `middle_at`, grown if they had to be; `state` updated (`_code_from`)."""
    codes, firsts = np.empty(len(starts), np.int64), np.empty(len(starts), np.int64)
    state[2] = 0
    i = 0
    while True:
        i = _code_from(
            i, starts, ends, data, words, table, middles, middle_at, state, codes, firsts
        )
        if i == len(starts):
            return codes, firsts[: state[2]], table, middles, middle_at
        if 2 * (state[0] + 1) > len(table):
            table = _rehashed(table, 2 * len(table))
        if state[0] == len(middle_at):
            middle_at = _doubled(middle_at)
        n_middle = max(0, (ends[i] - starts[i] - 9) // 8)
        while state[1] + n_middle > len(middles):
            middles = _doubled(middles)


class NameIndex:
    """Codes 0, 1, 2 … for names given as UTF-8 bytes, in order of first sight across calls."""

    def __init__(self) -> None:
        self._table = np.full((1024, 4), _EMPTY, np.int64)
        self._middles = np.empty(256, np.int64)
        self._middle_at = np.empty(512, np.int64)
        self._state = np.zeros(3, np.int64)  # names, middle words kept, new names of a call

    def __len__(self) -> int:
        return int(self._state[0])

    def codes(self, column: Utf8Names) -> tuple[np.ndarray, list[str]]:
        """Each record's code, and the names new here (decoded), in order of first sight."""
        data = np.ascontiguousarray(column.data, dtype=np.uint8)
        starts = np.asarray(column.starts, dtype=np.int64)
        ends = np.asarray(column.ends, dtype=np.int64)
        codes, firsts, *grown = _coded(
            starts,
            ends,
            data,
            words_of(data),
            self._table,
            self._middles,
            self._middle_at,
            self._state,
        )
        self._table, self._middles, self._middle_at = grown
        return codes, decoded_names(data, starts, ends, firsts)
