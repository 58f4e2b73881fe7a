"""Plain machine records' JSON, read by one compiled loop over Arrow's buffers.

A plain record is a Kafka value `{"thing": …, "quantity": …, "phenomenonTime": …, "result": …}`
under the key `thing.quantity`. `scan_records` reads a column of such values (and their keys)
straight from Arrow's buffers, with no Python object per record, and says for each whether it is
*certain*: a record that `json.loads` followed by `formats.narrow_record` would read the same way,
with the same numbers. Anything else is left to that path, value by value (it knows the reasons):

- not one JSON object of strings, numbers, `true`, `false` and `null` in UTF-8; a text with an
  escape or a control character; a field given twice; a missing or empty field;
- a key that is not the record's `thing.quantity`.

A number is read exactly as Python reads it: with one rounding when its digits fit a double and
its power of ten is at most 22 either way (Clinger's fast path), else by Eisel and Lemire's
algorithm when its significant digits are at most 19. A value with a number past that (more
digits, a subnormal or infinite value, a tie too close to call) is left to `json.loads` too.

    >>> values = pa.array([b'{"thing": "R1", "quantity": "s", "phenomenonTime": 5, "result": 1.5}',
    ...                    b'{"thing": "R1"}', b'{"thing": "R2", "quantity": "s",'
    ...                    b' "phenomenonTime": 6, "result": 0.30000000000000004}'])
    >>> scanned = scan_records(values, pa.array(["R1.s", "R1.s", "R2.s"]))
    >>> scanned.certain.tolist(), scanned.t[[0, 2]].tolist(), scanned.v[[0, 2]].tolist()
    ([True, False, True], [5.0, 6.0], [1.5, 0.30000000000000004])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numba import njit, types
from numba.cpython.unsafe.numbers import leading_zeros

_U1 = types.Array(types.uint8, 1, "C", readonly=True)
_I8 = types.Array(types.int64, 1, "C", readonly=True)
_BOOLS = types.Array(types.boolean, 1, "C", readonly=True)

_FIELD_NAMES = (b"thing", b"quantity", b"phenomenonTime", b"result")
_NAMES = np.frombuffer(b"".join(_FIELD_NAMES), dtype=np.uint8)
_NAME_STARTS = np.cumsum([0, *(len(name) for name in _FIELD_NAMES)]).astype(np.int64)
_LITERALS = (b"true", b"false", b"null")
_WORDS = np.frombuffer(b"".join(_LITERALS), dtype=np.uint8)
_WORD_STARTS = np.cumsum([0, *(len(word) for word in _LITERALS)]).astype(np.int64)
_POWERS = np.array([float(10**k) for k in range(23)])  # exact doubles
_SMALLEST_POWER, _LARGEST_POWER = -342, 308  # of ten, read by `_eisel_lemire`


def _powers_of_five() -> np.ndarray:
    """5^q for q in −342 … 308 in 128 bits, normalized (high bit set), as (high, low) pairs:
    truncated for q ≥ 0, rounded up past 64 significant bits for q < 0 (fast_float's table)."""
    table = []
    for q in range(_SMALLEST_POWER, _LARGEST_POWER + 1):
        five = 5 ** abs(q)
        if q < 0:
            z = five.bit_length() if five & (five - 1) else five.bit_length() - 1
            bits = z + 127 if q >= -27 else 2 * z + 128
            five = 2**bits // five + 1
        while five < 1 << 127:
            five <<= 1
        while five >= 1 << 128:
            five >>= 1
        table += [five >> 64, five & (2**64 - 1)]
    return np.array(table, dtype=np.uint64)


_FIVES = _powers_of_five()
_U64 = np.uint64
_ZERO, _ONE, _THREE, _TEN = _U64(0), _U64(1), _U64(3), _U64(10)
_U32, _U63, _LOW32, _ALL_ONES = _U64(32), _U64(63), _U64(2**32 - 1), _U64(2**64 - 1)
_NINE_BITS = _U64(0x1FF)  # below a product's 55 high bits (52 + 3 of fast_float)
_EXACT, _TWO_52, _TWO_53 = _U64(2**53), _U64(2**52), _U64(2**53)
_QUOTE, _BACKSLASH, _COLON, _COMMA, _DOT, _MINUS, _PLUS = 34, 92, 58, 44, 46, 45, 43


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
def _digit(b, p, e):
    return p < e and 48 <= b[p] <= 57


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
def _number(b, p, e):
    """The JSON number from b[p]: (end, value, exact); end −1 when none starts there. Not
    exact: more than 19 significant digits, a power of ten past ±308, or a value that is
    subnormal, infinite or too close to a tie for `_eisel_lemire`."""
    negative = p < e and b[p] == _MINUS
    if negative:
        p += 1
    if not _digit(b, p, e):
        return -1, 0.0, False
    mantissa, digits, power, exact, integer = _ZERO, 0, 0, True, True
    if b[p] == 48:  # a leading zero is the whole integer part: "01" is no number
        p += 1
    else:
        while _digit(b, p, e):
            if digits < 19:
                mantissa = _TEN * mantissa + _U64(b[p] - 48)
                digits += 1
            else:
                exact = False
            p += 1
    if p < e and b[p] == _DOT:
        integer = False
        p += 1
        if not _digit(b, p, e):
            return -1, 0.0, False
        while _digit(b, p, e):
            d = b[p] - 48
            if digits < 19:
                if mantissa or d:  # leading zeros are no significant digits
                    mantissa = _TEN * mantissa + _U64(d)
                    digits += 1
                power -= 1
            elif d:
                exact = False
            p += 1
    if p < e and (b[p] == 101 or b[p] == 69):  # e, E
        integer = False
        p += 1
        sign = 1
        if p < e and (b[p] == _PLUS or b[p] == _MINUS):
            sign = -1 if b[p] == _MINUS else 1
            p += 1
        if not _digit(b, p, e):
            return -1, 0.0, False
        exponent = 0
        while _digit(b, p, e):
            if exponent < 100000:
                exponent = 10 * exponent + (b[p] - 48)
            p += 1
        power += sign * exponent
    if not exact:
        return p, 0.0, False
    if mantissa == _ZERO:  # json.loads reads "-0" as the integer 0, "-0.0" as -0.0
        return p, -0.0 if negative and not integer else 0.0, True
    if mantissa <= _EXACT and -22 <= power <= 22:  # Clinger's fast path: one rounding
        value = float(mantissa)
        if power >= 0:
            value *= _POWERS[power]
        else:
            value /= _POWERS[-power]
    else:
        value, exact = _eisel_lemire(mantissa, power)
    return p, -value if negative else value, exact


@njit(cache=True, nogil=True, inline="always")
def _product(a, b):
    """The 128-bit product of two uint64 as (high, low) halves."""
    a0, a1, b0, b1 = a & _LOW32, a >> _U32, b & _LOW32, b >> _U32
    low_low, low_high, high_low = a0 * b0, a0 * b1, a1 * b0
    middle = high_low + (low_low >> _U32) + (low_high & _LOW32)
    high = a1 * b1 + (middle >> _U32) + (low_high >> _U32)
    return high, (middle << _U32) | (low_low & _LOW32)


@njit(cache=True, nogil=True)
def _eisel_lemire(w, q):
    """w · 10^q (w > 0) correctly rounded: (value, True); (0.0, False) where the algorithm
    cannot tell (Lemire, "Number Parsing at a Gigabyte per Second", 2021: fast_float's
    `compute_float`), or the value is subnormal or infinite."""
    if q < _SMALLEST_POWER or q > _LARGEST_POWER:
        return 0.0, False
    shifted = np.int64(leading_zeros(w))
    w = w << _U64(shifted)
    index = 2 * (q - _SMALLEST_POWER)
    high, low = _product(w, _FIVES[index])
    if high & _NINE_BITS == _NINE_BITS:  # the truncated power may matter: its low half too
        second_high, _ = _product(w, _FIVES[index + 1])
        low = low + second_high
        if second_high > low:
            high += _ONE
    if low == _ALL_ONES and not -27 <= q <= 55:
        return 0.0, False
    upper = np.int64(high >> _U63)
    shift = _U64(upper + 9)
    mantissa = high >> shift
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upper - shifted + 1023
    if power2 <= 0:
        return 0.0, False
    tie = low <= _ONE and -4 <= q <= 23 and mantissa & _THREE == _ONE
    if tie and (mantissa << shift) == high:  # exactly between two doubles: round to even
        mantissa &= ~_ONE
    mantissa += mantissa & _ONE
    mantissa >>= _ONE
    if mantissa >= _TWO_53:
        mantissa = _TWO_52
        power2 += 1
    if power2 >= 0x7FF:
        return 0.0, False
    return math.ldexp(float(mantissa | _TWO_52), power2 - 1075), True


@njit(cache=True, nogil=True)
def _other_end(b, p, e):
    """The end of a value of a field that is not the record's (text, number or literal); −1
    for anything else (an object, an array or a number past `_number` is left to Python)."""
    c = b[p]
    if c == _QUOTE:
        end = _text_end(b, p, e)
        return end + 1 if end >= 0 else -1
    if c == _MINUS or 48 <= c <= 57:  # json.loads refuses an integer of 4,301 digits
        end, _, exact = _number(b, p, e)
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
            end, x, exact = _number(b, p, e)
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
