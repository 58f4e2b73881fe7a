"""JSON numbers read from bytes exactly as Python reads them, in compiled code.

`read_number(b, p, e)` reads the JSON number that starts at b[p] (strict JSON: no leading zero
before more digits, no `+`, no `.5`, no `NaN`) and says whether its value is exact: the double
that `float(json.loads(text))` gives, bit for bit. It is when the number has at most 19
significant digits and a power of ten within ±308, and the value is normal: Clinger's fast path
(digits that fit a double, a power of ten at most 22 either way: one rounding, the correct one),
else the Eisel–Lemire algorithm (Lemire, "Number Parsing at a Gigabyte per Second", 2021;
fast_float's `compute_float`, with its table of powers of five). Otherwise (more digits, a
subnormal or infinite value, a tie too close to call) the caller leaves the text to Python.

    >>> text = np.frombuffer(b"137.56138392857142,", dtype=np.uint8)
    >>> read_number(text, 0, len(text))
    (18, 137.56138392857142, True)
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

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
_TWO_52, _TWO_53 = _U64(2**52), _U64(2**53)  # a mantissa up to 2**53 is a double as it is
_DOT, _MINUS, _PLUS = 46, 45, 43


@njit(cache=True, nogil=True, inline="always")
def _digit(b, p, e):
    """Whether b[p] is a decimal digit (and p before the end e)."""
    return p < e and 48 <= b[p] <= 57


@njit(cache=True, nogil=True)
def read_number(b, p, e):
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
    if mantissa <= _TWO_53 and -22 <= power <= 22:  # Clinger's fast path: one rounding
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
