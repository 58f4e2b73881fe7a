"""Plain machine records' JSON, read by one compiled loop over Arrow's buffers.

A plain record is a Kafka value `{"thing": …, "quantity": …, "phenomenonTime": …, "result": …}`
under the key `thing.quantity`. `scan_records` reads a column of such values (and their keys)
straight from Arrow's buffers, with no Python object per record, and says for each whether it is
*certain*: a record that `json.loads` followed by `formats.narrow_record` would read the same way,
with the same numbers. Anything else is left to that path, value by value (it knows the reasons):

- not one JSON object of strings, numbers, `true`, `false` and `null` in UTF-8; a text with an
  escape or a control character; a field given twice; a missing or empty field;
- a key that is not the record's `thing.quantity`.

A number is read exactly as Python reads it (`json_numbers.read_number`: Clinger's fast path,
else Eisel and Lemire's algorithm, up to 19 significant digits); a value with a number past that
(more digits, a subnormal or infinite value, a tie too close to call) is left to `json.loads`
too.

    >>> values = pa.array([b'{"thing": "R1", "quantity": "s", "phenomenonTime": 5, "result": 1.5}',
    ...                    b'{"thing": "R1"}', b'{"thing": "R2", "quantity": "s",'
    ...                    b' "phenomenonTime": 6, "result": 0.30000000000000004}'])
    >>> scanned = scan_records(values, pa.array(["R1.s", "R1.s", "R2.s"]))
    >>> scanned.certain.tolist(), scanned.t[[0, 2]].tolist(), scanned.v[[0, 2]].tolist()
    ([True, False, True], [5.0, 6.0], [1.5, 0.30000000000000004])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numba import njit, types

from statestream.codecs.json_lines import packed
from statestream.codecs.json_numbers import read_number

_U1 = types.Array(types.uint8, 1, "C", readonly=True)
_I8 = types.Array(types.int64, 1, "C", readonly=True)
_BOOLS = types.Array(types.boolean, 1, "C", readonly=True)

_NAMES, _NAME_STARTS = packed([b"thing", b"quantity", b"phenomenonTime", b"result"])
_WORDS, _WORD_STARTS = packed([b"true", b"false", b"null"])  # JSON's literals
_QUOTE, _BACKSLASH, _COLON, _COMMA, _DOT, _MINUS = 34, 92, 58, 44, 46, 45


@dataclass(frozen=True)
class ScannedRecords:
    """What `scan_records` read, one entry per value: `certain` (see the module); for a certain
    record its time `t` and result `v`, and `thing_bytes` (the byte length of its thing: the key
    is thing, ".", quantity)."""

    certain: np.ndarray  # bool
    thing_bytes: np.ndarray  # int64
    t: np.ndarray  # float64
    v: np.ndarray  # float64


def scan_records(
    values: pa.Array | pa.ChunkedArray, keys: pa.Array | pa.ChunkedArray
) -> ScannedRecords:
    """Scan `values` (binary or string) with their `keys` (string or binary, the same length).
    Chunks are read where they are when keys and values are cut alike, else joined first."""
    if len(values) != len(keys):
        raise ValueError("scan_records needs one key per value")
    value_chunks, key_chunks = _chunks(values), _chunks(keys)
    if [len(chunk) for chunk in value_chunks] != [len(chunk) for chunk in key_chunks]:
        value_chunks, key_chunks = [_joined(values)], [_joined(keys)]
    parts = [
        _scanned(*_buffers(v), *_buffers(k)) for v, k in zip(value_chunks, key_chunks, strict=True)
    ]
    if len(parts) == 1:
        return ScannedRecords(*parts[0])
    return ScannedRecords(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    if isinstance(column, pa.ChunkedArray):
        return column.chunks or [pa.array([], column.type)]
    return [column]


def _joined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary or string array's bytes, its offsets (int64, one more than the values) and
    which values are present."""
    offset_type: type[np.int32] | type[np.int64]
    if column.type in (pa.large_binary(), pa.large_string()):
        offset_type = np.int64
    elif column.type in (pa.binary(), pa.string()):
        offset_type = np.int32
    else:
        raise TypeError(f"scan_records reads binary or string columns, not {column.type}")
    n = len(column)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], offset_type)[column.offset : column.offset + n + 1]
    data = buffers[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    present = column.is_valid().to_numpy(zero_copy_only=False)
    return data, offsets.astype(np.int64), np.ascontiguousarray(present)


# the compiled steps, then the kernel that numba compiles on import


@njit(cache=True, nogil=True, inline="always")
def _blank(c):
    return c == 32 or c == 9 or c == 10 or c == 13


@njit(cache=True, nogil=True, inline="always")
def _skip_blanks(b, p, e):
    while p < e and _blank(b[p]):
        p += 1
    return p


@njit(cache=True, nogil=True, inline="always")
def _text_end(b, p, e):
    """The index of the closing quote of the text whose opening quote is b[p]; −1 if it has an
    escape, a control character, bytes that are no UTF-8 (as Python's strict decoder reads it)
    or no end."""
    p += 1
    while p < e:
        c = b[p]
        if c == _QUOTE:
            return p
        if c == _BACKSLASH or c < 32:
            return -1
        p = p + 1 if c < 128 else _utf8_end(b, p, e)
        if p < 0:
            return -1
    return -1


@njit(cache=True, nogil=True, inline="always")
def _utf8_end(b, p, e):
    """The end of the UTF-8 character of 2 to 4 bytes that starts at b[p]; −1 if none does
    (no overlong form, no surrogate, nothing past U+10FFFF: RFC 3629, as Python decodes)."""
    c = b[p]
    if 0xC2 <= c <= 0xDF:
        count, low, high = 1, 0x80, 0xBF
    elif 0xE0 <= c <= 0xEF:
        count = 2
        low = 0xA0 if c == 0xE0 else 0x80
        high = 0x9F if c == 0xED else 0xBF
    elif 0xF0 <= c <= 0xF4:
        count = 3
        low = 0x90 if c == 0xF0 else 0x80
        high = 0x8F if c == 0xF4 else 0xBF
    else:
        return -1
    if p + count >= e or not low <= b[p + 1] <= high:
        return -1
    for k in range(2, count + 1):
        if not 0x80 <= b[p + k] <= 0xBF:
            return -1
    return p + count + 1


@njit(cache=True, nogil=True, inline="always")
def _same(a, i, b, j, count):
    """Whether a[i : i + count] is b[j : j + count]."""
    k = 0
    while k < count and a[i + k] == b[j + k]:
        k += 1
    return k == count


@njit(cache=True, nogil=True, inline="always")
def _field(b, start, end):
    """Which of the record's fields the name b[start:end] is (0 … 3), −1 for none."""
    for f in range(4):
        first, last = _NAME_STARTS[f], _NAME_STARTS[f + 1]
        if last - first == end - start and _same(b, start, _NAMES, first, end - start):
            return f
    return -1


@njit(cache=True, nogil=True)
def _other_end(b, p, e):
    """The end of a value of a field that is not the record's (text, number or literal); −1
    for anything else (an object, an array or a number past `read_number` is left to Python)."""
    c = b[p]
    if c == _QUOTE:
        end = _text_end(b, p, e)
        return end + 1 if end >= 0 else -1
    if c == _MINUS or 48 <= c <= 57:  # json.loads refuses an integer of 4,301 digits
        end, _, exact = read_number(b, p, e)
        return end if exact else -1
    for w in range(3):
        first, last = _WORD_STARTS[w], _WORD_STARTS[w + 1]
        if p + last - first <= e and _same(b, p, _WORDS, first, last - first):
            return p + last - first
    return -1


@njit(cache=True, nogil=True)
def _record(b, p, e):
    """Scan one value b[p:e]: (certain, thing start, thing end, quantity start, quantity end,
    t, v)."""
    uncertain = (False, 0, 0, 0, 0, 0.0, 0.0)
    p = _skip_blanks(b, p, e)
    if p >= e or b[p] != 123:  # {
        return uncertain
    p = _skip_blanks(b, p + 1, e)
    seen = 0
    thing_start = thing_end = quantity_start = quantity_end = 0
    t = v = 0.0
    while True:
        if p >= e or b[p] != _QUOTE:
            return uncertain
        name_end = _text_end(b, p, e)
        if name_end < 0:
            return uncertain
        f = _field(b, p + 1, name_end)
        p = _skip_blanks(b, name_end + 1, e)
        if p >= e or b[p] != _COLON:
            return uncertain
        p = _skip_blanks(b, p + 1, e)
        if p >= e:
            return uncertain
        if f >= 0:
            if seen & (1 << f):
                return uncertain
            seen |= 1 << f
        if f == 0 or f == 1:
            if b[p] != _QUOTE:
                return uncertain
            end = _text_end(b, p, e)
            if end <= p + 1:  # no end, or empty
                return uncertain
            if f == 0:
                thing_start, thing_end = p + 1, end
            else:
                quantity_start, quantity_end = p + 1, end
            p = end + 1
        elif f == 2 or f == 3:
            end, x, exact = read_number(b, p, e)
            if end < 0 or not exact:
                return uncertain
            if f == 2:
                t = x
            else:
                v = x
            p = end
        else:
            p = _other_end(b, p, e)
            if p < 0:
                return uncertain
        p = _skip_blanks(b, p, e)
        if p < e and b[p] == _COMMA:
            p = _skip_blanks(b, p + 1, e)
            continue
        if p < e and b[p] == 125:  # }
            break
        return uncertain
    if _skip_blanks(b, p + 1, e) != e or seen != 15:
        return uncertain
    return True, thing_start, thing_end, quantity_start, quantity_end, t, v


@njit(cache=True, nogil=True, inline="always")
def _key_matches(b, thing_start, thing_end, quantity_start, quantity_end, keys, start, end):
    """Whether keys[start:end] is the thing, a dot and the quantity."""
    thing, quantity = thing_end - thing_start, quantity_end - quantity_start
    if end - start != thing + 1 + quantity or keys[start + thing] != _DOT:
        return False
    return _same(keys, start, b, thing_start, thing) and _same(
        keys, start + thing + 1, b, quantity_start, quantity
    )


@njit(
    types.Tuple((types.boolean[::1], types.int64[::1], types.float64[::1], types.float64[::1]))(
        _U1, _I8, _BOOLS, _U1, _I8, _BOOLS
    ),
    cache=True,
    nogil=True,
)
def _scanned(data, offsets, present, key_data, key_offsets, key_present):
    """Whether each value is certain, and its thing's byte length, t and v."""
    n = len(offsets) - 1
    certain = np.zeros(n, np.bool_)
    thing_bytes = np.zeros(n, np.int64)
    t = np.full(n, np.nan)
    v = np.full(n, np.nan)
    for i in range(n):
        if not present[i] or not key_present[i]:
            continue
        ok, ts, te, qs, qe, ti, vi = _record(data, offsets[i], offsets[i + 1])
        if not ok:
            continue
        if not _key_matches(data, ts, te, qs, qe, key_data, key_offsets[i], key_offsets[i + 1]):
            continue
        certain[i], thing_bytes[i], t[i], v[i] = True, te - ts, ti, vi
    return certain, thing_bytes, t, v
