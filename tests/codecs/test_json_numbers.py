"""Numbers read in compiled code exactly as `json.loads` (then `float`) reads them, or left
to Python; and what is no JSON number is not read as one."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from statestream.codecs.json_numbers import read_number


def read_text(text: str) -> tuple[int, float, bool]:
    """`read_number` of `text` (also used by `test_json_records`)."""
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    return read_number(data, 0, len(data))


read_text("0")  # numba compiles `read_number` on its first call: here, not in a test's deadline


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _assert_read_as_json_reads(text: str) -> bool:
    """The number `text` is read to its end, and exactly as json.loads reads it (then float),
    or handed to Python; True if read in the kernel."""
    end, value, exact = read_text(text)
    assert end == len(text.encode())
    if exact:
        assert bits(value) == bits(float(json.loads(text))), text
    return exact


doubles = st.floats(allow_nan=False, allow_infinity=False)


@given(doubles)
@example(5e-324)  # subnormal: handed to Python
@example(2.2250738585072014e-308)
@example(1.7976931348623157e308)
@example(-0.0)
@example(0.30000000000000004)
def test_every_double_in_its_shortest_text_is_read_exactly(x: float) -> None:
    for text in (repr(x), json.dumps(x), f"{x:.17e}", f"{x:.17g}".replace("inf", "1e999")):
        if "e" in text or "." in text or text.lstrip("-").isdigit():
            _assert_read_as_json_reads(text)


@given(
    st.integers(1, 10**19 - 1),
    st.integers(-360, 330),
    st.booleans(),
)
@example(9007199254740993, 0, False)  # 2**53 + 1: a tie, rounds to even
@example(7450580596923828125, -27, False)  # 2**-? ties near the fast path's edge
@example(17976931348623157, 292, False)  # the largest double
@example(2470328229206232721, -342, False)  # half the smallest subnormal
def test_digits_and_powers_of_ten_are_read_exactly_or_left_to_python(
    digits: int, power: int, negative: bool
) -> None:
    sign = "-" if negative else ""
    text = f"{sign}{digits}e{power}"
    _assert_read_as_json_reads(text)
    whole, fraction = str(digits)[:3], str(digits)[3:] or "0"
    _assert_read_as_json_reads(f"{sign}{whole}.{fraction}E+{power}" if power >= 0 else text)


def test_the_common_numbers_need_no_python() -> None:
    for text in ("1554096380468", "-4.44", "138.37233616017767", "0.1", "1e-7", "-0", "2E3"):
        assert _assert_read_as_json_reads(text), text
    assert bits(read_text("-0")[1]) == bits(0.0)  # json.loads reads the integer 0
    assert bits(read_text("-0.0")[1]) == bits(-0.0)
    for text in ("1" * 25, "1e400", "4.9e-324", "0." + "1" * 30):  # past 19 digits, ±inf, tiny
        assert not _assert_read_as_json_reads(text), text


@pytest.mark.parametrize("text", ["01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "--1", "1.e3"])
def test_what_is_no_json_number_is_not_read_as_one(text: str) -> None:
    end, _, _ = read_text(text)
    assert end < len(text)  # refused, or a shorter number that the record's syntax then refuses
