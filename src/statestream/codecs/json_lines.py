"""Lines of JSON made of fixed texts and numbers, written by one compiled loop.

Line i is `heads[codes[i]]`, then `texts[0]`, the number `numbers[0][i]`, `texts[1]`, … , the
number `numbers[k - 1][i]` and `texts[k]`; the lines are joined by newlines (none after the
last). A number is written as `formats.json_number` writes it: an integral value below 2**53
without a fraction, a non-finite one as null, any other in orjson's shortest text (orjson
writes all those of a call at once; the loop copies each into its place). A release of many
joined pairs is written with no Python object per line or value.

    >>> json_lines([b'{"m": "a", ', b'{"m": "b", '], np.array([1, 0]),
    ...            [b'"t": ', b', "v": ', b"}"], [np.array([5.0, -0.0]), np.array([0.25, np.nan])])
    b'{"m": "b", "t": 5, "v": 0.25}\\n{"m": "a", "t": 0, "v": null}'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_U1, _I8 = types.uint8[::1], types.int64[::1]
_BYTES = types.Array(types.uint8, 1, "C", readonly=True)  # of a bytes object
_F8_2D = types.float64[:, ::1]
_EXACT = 2.0**53  # integral values below this are written as integers
_NULL = np.frombuffer(b"null", dtype=np.uint8)
_TWO_DIGITS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8)


def json_lines(
    heads: Sequence[bytes],
    codes: np.ndarray,
    texts: Sequence[bytes],
    numbers: Sequence[np.ndarray],
) -> bytes:
    """The lines (see the module), as UTF-8 bytes: `heads` and `texts` are UTF-8 already,
    `codes` index `heads` (one per line), `numbers` are columns of floats (one value per line),
    one fewer than `texts`."""
    if len(texts) != len(numbers) + 1:
        raise ValueError("json_lines needs one text more than number columns")
    n = len(codes)
    if n == 0:
        return b""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    if codes.min() < 0 or codes.max() >= len(heads):
        raise ValueError("each code must index `heads`")
    values = np.empty((len(numbers), n), dtype=np.float64)
    for row, column in zip(values, numbers, strict=True):
        row[:] = column
    fractional, first = _fractional(values)
    text = orjson.dumps(fractional, option=orjson.OPT_SERIALIZE_NUMPY)
    written = _written(
        codes,
        *packed(heads),
        *packed(texts),
        values,
        np.frombuffer(text, dtype=np.uint8),
        first,
    )
    return written.tobytes()


def packed(pieces: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings as one array of their bytes and the offsets of each (one more): what the
    compiled loops (here and `json_records`) index."""
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(piece) for piece in pieces])
    return np.frombuffer(b"".join(pieces) or b"\0", dtype=np.uint8), offsets


# the compiled steps, then the kernels that numba compiles on import


@intrinsic
def _memcpy(typingctx, out, at, data, start, count):
    """Copy `count` bytes of `data` from `start` to `out` at `at` (C's memcpy: a byte loop
    copies a short text several times slower). The caller keeps both in bounds."""

    def codegen(context, builder, signature, args):
        out_array = context.make_array(signature.args[0])(context, builder, args[0])
        data_array = context.make_array(signature.args[2])(context, builder, args[2])
        to = builder.gep(out_array.data, [args[1]])
        source = builder.gep(data_array.data, [args[3]])
        cgutils.raw_memcpy(builder, to, source, args[4], 1)
        return context.get_dummy_value()

    return types.void(out, types.int64, data, types.int64, types.int64), codegen


@njit(cache=True, nogil=True, inline="always")
def _kind(x):
    """0: an integer's digits, 1: orjson's text, 2: null."""
    if not np.isfinite(x):
        return 2
    if abs(x) < _EXACT and x == np.floor(x):
        return 0
    return 1


@njit(cache=True, nogil=True, inline="always")
def _value_starts(text, count):
    """Where each of the `count` values of orjson's array text ("[a,b,c]") starts, and one past
    the last's end (so value c is text[starts[c] : starts[c + 1] - 1])."""
    starts = np.empty(count + 1, np.int64)
    starts[0] = 1
    m = 1
    for p in range(len(text)):
        if text[p] == 44:
            starts[m] = p + 1
            m += 1
    starts[m] = len(text)  # "]" ends the last value, as a comma does the others
    return starts


@njit(cache=True, nogil=True, inline="always")
def _copied(out, at, data, start, end):
    _memcpy(out, at, data, start, end - start)
    return at + end - start


@njit(cache=True, nogil=True, inline="always")
def _integer(out, at, v, digits):
    """Write the integer v's digits, two at a time, from the end of `digits` (24 bytes)."""
    if v < 0:
        out[at] = 45  # "-"
        at += 1
        v = -v
    m = len(digits)
    while v >= 100:
        q = v // 100
        r = 2 * (v - 100 * q)
        m -= 2
        digits[m], digits[m + 1] = _TWO_DIGITS[r], _TWO_DIGITS[r + 1]
        v = q
    if v >= 10:
        m -= 2
        digits[m], digits[m + 1] = _TWO_DIGITS[2 * v], _TWO_DIGITS[2 * v + 1]
    else:
        m -= 1
        digits[m] = 48 + v
    return _copied(out, at, digits, m, len(digits))


@njit(types.Tuple((types.float64[::1], _I8))(_F8_2D), cache=True, nogil=True)
def _fractional(values):
    """The values written in orjson's text (finite, not integral below 2**53), column by
    column, each in line order: the order `_written` takes them in; and where each column's
    start among them (one more: their count)."""
    out = np.empty(values.size, np.float64)
    first = np.empty(values.shape[0] + 1, np.int64)
    m = 0
    for j in range(values.shape[0]):
        first[j] = m
        for i in range(values.shape[1]):
            if _kind(values[j, i]) == 1:
                out[m] = values[j, i]
                m += 1
    first[-1] = m
    return out[:m], first


@njit(_U1(_I8, _BYTES, _I8, _BYTES, _I8, _F8_2D, _BYTES, _I8), cache=True, nogil=True)
def _written(codes, head_data, head_offsets, text_data, text_offsets, values, orjson_text, first):
    """The lines' bytes: heads and texts given packed (`packed`), the number columns as the
    rows of `values`, and orjson's text of their `_fractional` values, which start for column
    j at `first[j]`."""
    k, n = values.shape
    starts = _value_starts(orjson_text, first[k])
    cursor = first[:k].copy()  # each column's next value among the fractional ones
    size = n * (text_offsets[-1] + 1) + len(orjson_text) + k * n * 20
    for i in range(n):
        size += head_offsets[codes[i] + 1] - head_offsets[codes[i]]
    out = np.empty(size, np.uint8)
    at = 0
    digits = np.empty(24, np.uint8)
    for i in range(n):
        if i:
            out[at] = 10  # "\n"
            at += 1
        at = _copied(out, at, head_data, head_offsets[codes[i]], head_offsets[codes[i] + 1])
        for j in range(k + 1):
            at = _copied(out, at, text_data, text_offsets[j], text_offsets[j + 1])
            if j == k:
                break
            x = values[j, i]
            kind = _kind(x)
            if kind == 0:
                at = _integer(out, at, np.int64(x), digits)
            elif kind == 1:
                c = cursor[j]
                at = _copied(out, at, orjson_text, starts[c], starts[c + 1] - 1)
                cursor[j] = c + 1
            else:
                at = _copied(out, at, _NULL, 0, 4)
    return out[:at]
