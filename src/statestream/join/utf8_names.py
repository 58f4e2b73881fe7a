"""Codes of names given as UTF-8 bytes, the way Arrow keeps a string column, in one compiled pass.

`Utf8Names` is such a column: record i's name is `data[offsets[i]:offsets[i + 1]]`. `ByteCodes`
remembers the bytes of every name it has coded, in a hash table of its own, so a batch's records
are coded without a Python string per record or per distinct name: only a name not seen before
is decoded, once, and given its code by the caller (`NameCodes`, whose codes these are).

    >>> names = Utf8Names.of(["m2", "m1", "m2"])
    >>> table = ByteCodes()
    >>> codes, new_rows = table.looked_up(names)
    >>> codes.tolist(), new_rows.tolist()  # a name not yet coded: -1 - its rank among the new
    ([-1, -2, -1], [0, 1])
    >>> table.settle(codes, np.array([7, 8]))
    >>> codes.tolist(), table.looked_up(names)[0].tolist()
    ([7, 8, 7], [7, 8, 7])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, types

from statestream.join.compiled import I8, kernel, step

_I8 = np.int64
_U1 = types.uint8[::1]
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Utf8Names:
    """A column of names as UTF-8 bytes: record i's name is `data[offsets[i]:offsets[i + 1]]`
    (an Arrow string column's offsets and data buffers); `rows`, if given, picks and orders
    the records (record k of this column is row `rows[k]` of the buffers)."""

    offsets: np.ndarray
    data: np.ndarray
    rows: np.ndarray | None = None

    @classmethod
    def of(cls, names: list[str]) -> Utf8Names:
        encoded = [name.encode() for name in names]
        offsets = np.zeros(len(encoded) + 1, dtype=_I8)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return cls(offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def __len__(self) -> int:
        return len(self.offsets) - 1 if self.rows is None else len(self.rows)

    @property
    def row_index(self) -> np.ndarray:
        return np.arange(len(self.offsets) - 1, dtype=_I8) if self.rows is None else self.rows

    def take(self, index: np.ndarray) -> Utf8Names:
        """The records at `index`, on the same buffers."""
        return Utf8Names(self.offsets, self.data, self.row_index.take(index))

    def at_rows(self, rows: np.ndarray) -> list[str]:
        """The names in these rows of the buffers."""
        data, offsets = self.data, self.offsets.tolist()
        return [data[offsets[r] : offsets[r + 1]].tobytes().decode() for r in rows.tolist()]

    def decoded(self) -> np.ndarray:
        """The names of the records, as an object array."""
        return np.array(self.at_rows(self.row_index), dtype=object)


class ByteCodes:
    """A hash table from a name's bytes to its code, grown as needed; the codes are given by
    the caller (`settle`) for the names `looked_up` found new.

    Each name is an entry: its hash, length, first 16 bytes (two words) and code in one cache
    line, the bytes after those in an arena. The slots (open addressing, linear probing, at
    most half taken) hold the entry's number and the top half of its hash, eight bytes each: a
    lookup reads a slot and, when the hash agrees, one entry, both likely in the CPU's cache."""

    def __init__(self) -> None:
        self._slots = np.zeros(16, dtype=_I8)  # (top 32 bits of the hash) | (entry + 1); 0 free
        self._entries = np.zeros((8, _COLUMNS), dtype=_I8)
        self._arena = np.zeros(64, dtype=np.uint8)
        self._used = np.zeros(2, dtype=_I8)  # entries, arena bytes
        self._unsettled = 0  # entries `looked_up` added last, at the end, codes still ranks

    def looked_up(self, names: Utf8Names) -> tuple[np.ndarray, np.ndarray]:
        """Each record's code, and the rows of the first record of each name not seen before.

        A new name's records get -1 - its rank among the new ones (in order of first record)
        until `settle` gives the codes.
        """
        offsets = names.offsets
        if offsets.dtype != np.int32:
            offsets = offsets.astype(_I8, copy=False)
        rows = _NO_ROWS if names.rows is None else names.rows.astype(_I8, copy=False)
        data = np.ascontiguousarray(names.data, dtype=np.uint8)
        n = len(names)
        codes = np.empty(n, dtype=_I8)
        first = np.empty(n, dtype=_I8)  # pages untouched but for the new names
        done = new = 0
        while done < n:
            self._reserve(int(offsets[-1] - offsets[0]))
            table = (self._slots, self._entries, self._arena, self._used)
            done, new = _looked_up(*table, offsets, data, rows, n, done, new, codes, first)
        self._unsettled = new
        return codes, first[:new]

    def settle(self, codes: np.ndarray, new_codes: np.ndarray) -> None:
        """Give the names `looked_up` found new their codes (in its order), in `codes` too."""
        if self._unsettled:
            new_codes = np.asarray(new_codes, dtype=_I8)
            entries = int(self._used[0])
            self._entries[entries - self._unsettled : entries, _CODE] = new_codes
            _settled(codes, new_codes)
        self._unsettled = 0

    def _reserve(self, data_bytes: int) -> None:
        """Room for one more entry at least, and in the arena for `data_bytes` more."""
        entries, used = self._used.tolist()
        if entries == len(self._entries):
            grown = np.zeros((2 * entries, _COLUMNS), dtype=_I8)
            grown[:entries] = self._entries
            self._entries = grown
            self._slots = _rehashed(self._entries, entries, 4 * entries)
        if used + data_bytes > len(self._arena):
            arena = np.zeros(max(used + data_bytes, 2 * len(self._arena)), dtype=np.uint8)
            arena[:used] = self._arena[:used]
            self._arena = arena


# an entry's columns: the name's hash, its length, its first 16 bytes (two little-endian
# words, zero-padded), where its other bytes start in the arena, its code
_HASH, _LENGTH, _WORD0, _WORD1, _REST, _CODE = range(6)
_COLUMNS = 8  # an entry is one 64-byte cache line
_TAG = np.int64(-(1 << 32))  # a slot's bits of the hash
_NO_ROWS = np.empty(0, dtype=_I8)


@step
def _word(data, at, size):
    """`size` ≤ 8 bytes from `at` as one little-endian integer."""
    w = np.uint64(0)
    for k in range(size):
        w |= np.uint64(data[at + k]) << np.uint64(8 * k)
    return w


@step
def _word8(data, at):
    """Eight bytes from `at` as one little-endian integer (a literal count: LLVM loads them at
    once)."""
    w = np.uint64(0)
    for k in range(8):
        w |= np.uint64(data[at + k]) << np.uint64(8 * k)
    return w


@step
def _short_word(data, at, size):
    """`_word` for 0 ≤ `size` ≤ 8: eight bytes read at once and masked, where the data has them."""
    if at + 8 <= len(data):
        keep = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - 8 * size) if size else np.uint64(0)
        return _word8(data, at) & keep
    return _word(data, at, size)


@step
def _mixed(h, w):
    h = (h ^ w) * _MULTIPLIER
    return h ^ (h >> np.uint64(32))


@step
def _key(data, begin, size):
    """A name's hash and first two words (as int64s, zero-padded)."""
    w0 = _short_word(data, begin, min(size, 8))
    w1 = _short_word(data, begin + 8, min(max(size - 8, 0), 8))
    h = _mixed(_mixed(np.uint64(size) * _MULTIPLIER, w0), w1)
    at, end = begin + 16, begin + size
    while at < end:
        h = _mixed(h, _short_word(data, at, min(end - at, 8)))
        at += 8
    return np.int64(h), np.int64(w0), np.int64(w1)


@step
def _same(arena, a, data, b, size):
    """Whether `size` bytes from `a` in the arena are those from `b` in `data`."""
    for k in range(size):  # noqa: SIM110 (numba compiles no generator in `all`)
        if arena[a + k] != data[b + k]:
            return False
    return True


@kernel(types.int64[:, ::1], types.int64, types.int64)
def _rehashed(entries, count, size):
    """The slots of the first `count` entries, `size` of them (a power of two)."""
    slots = np.zeros(size, np.int64)
    mask = size - 1
    for e in range(count):
        h = entries[e, _HASH]
        s = h & mask
        while slots[s]:
            s = (s + 1) & mask
        slots[s] = (h & _TAG) | (e + 1)
    return slots


def _looked_up_types(offsets: types.Array) -> tuple:
    table = (I8, types.int64[:, ::1], _U1, I8)
    data = types.Array(types.uint8, 1, "C", readonly=True)  # a view of Arrow's buffer, say
    return (*table, offsets, data, I8, types.int64, types.int64, types.int64, I8, I8)


@njit([_looked_up_types(types.int32[:]), _looked_up_types(I8)], cache=True, nogil=True)
def _looked_up(slots, entries, arena, used, offsets, data, rows, n, done, new, out, first):
    """Codes (`out`) of `n` records (rows `rows` of the buffers, or the first n if `rows` is
    empty) from `done` on, until the entries are full; a name not in the table is added with
    code -1 - its rank among the new (`new` so far), its first row in `first`. Returns how
    many records are done and how many names were new."""
    mask = len(slots) - 1
    count = used[0]
    for i in range(done, n):
        row = rows[i] if len(rows) else i
        begin, size = offsets[row], offsets[row + 1] - offsets[row]
        h, w0, w1 = _key(data, begin, size)
        s, tag, e = h & mask, h & _TAG, -1
        while slots[s]:
            if slots[s] & _TAG == tag:
                e = (slots[s] & ~_TAG) - 1
                same = entries[e, _LENGTH] == size and entries[e, _WORD0] == w0
                same = same and entries[e, _WORD1] == w1
                if same and (
                    size <= 16 or _same(arena, entries[e, _REST], data, begin + 16, size - 16)
                ):
                    break
                e = -1
            s = (s + 1) & mask
        if e < 0:  # new: an entry, its bytes after the 16th to the arena, its code its rank
            if count == len(entries):
                used[0] = count
                return i, new
            e, rest = count, used[1]
            for k in range(16, size):
                arena[rest + k - 16] = data[begin + k]
            used[1] += max(size - 16, 0)
            entries[e, _HASH], entries[e, _LENGTH], entries[e, _WORD0] = h, size, w0
            entries[e, _WORD1], entries[e, _REST], entries[e, _CODE] = w1, rest, -1 - new
            slots[s] = tag | (e + 1)
            count += 1
            first[new] = row
            new += 1
        out[i] = entries[e, _CODE]
    used[0] = count
    return n, new


@kernel(I8, I8)
def _settled(codes, new_codes):
    for i in range(len(codes)):
        if codes[i] < 0:
            codes[i] = new_codes[-1 - codes[i]]
