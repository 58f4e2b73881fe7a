"""A joined pair in the spec's output format: the one writer of pairs' JSON.

    {"thing": "R1", "quantity": "vaPower_C11", "phenomenonTime": <time>, "result": <result>,
     "left": {"quantity": "actSpeed_C11", "phenomenonTime": <t>, "result": <v>},
     "right": {"quantity": "vaTorque_C11", "phenomenonTime": <t>, "result": <v>}}

Numbers are written as `formats.json_number` writes one (integral values without a fraction,
non-finite ones as null, others in orjson's shortest text). A batch's pairs are written by Arrow
and numpy, a column at a time, into one block of UTF-8 lines: no Python object per pair or per
number, as a release of 250,000 pairs would otherwise cost ~0.4 s of a task's CPU.

    >>> spec = JoinSpec("speed", "torque", "power", function="product")
    >>> pairs = JoinedPairs(*(np.array([x]) for x in (5.0, 2.0, 0, 7.0, -0.5, 1, -1.0)))
    >>> print(pair_json_block(CodedNames(np.array([0]), ["R1"]), spec, pairs).decode())
    {"thing": "R1", "quantity": "power", "phenomenonTime": 6, "result": -1, \
"left": {"quantity": "speed", "phenomenonTime": 5, "result": 2}, \
"right": {"quantity": "torque", "phenomenonTime": 7, "result": -0.5}}
"""

from __future__ import annotations

import json

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from statestream.formats import json_numbers
from statestream.join import CodedNames, JoinedPairs, JoinSpec
from statestream.join.names import NameCodes

_COMMA, _DOT, _ZERO = (ord(c) for c in ",.0")


def pair_json_block(things: CodedNames, spec: JoinSpec, pairs: JoinedPairs) -> bytes:
    """The pairs (`things`: each pair's thing) as JSON texts, one a line, no newline after the
    last: the block that `jobs.output_rows` packs. Empty without pairs."""
    if len(pairs) == 0:
        return b""
    heads = pa.array(
        [
            f'{{"thing": {json.dumps(name)}, "quantity": {json.dumps(spec.result)}, '
            for name in things.names
        ],
        pa.string(),
    )
    left = f'"left": {{"quantity": {json.dumps(spec.left)}, "phenomenonTime": '
    right = f'"right": {{"quantity": {json.dumps(spec.right)}, "phenomenonTime": '
    pieces = [
        heads.take(pa.array(np.asarray(things.codes, dtype=np.int64))),
        '"phenomenonTime": ',
        json_number_column(pairs.time),
        ', "result": ',
        json_number_column(pairs.result),
        f", {left}",
        json_number_column(pairs.left_t),
        ', "result": ',
        json_number_column(pairs.left_v),
        f"}}, {right}",
        json_number_column(pairs.right_t),
        ', "result": ',
        json_number_column(pairs.right_v),
        "}}\n",
    ]
    lines = pc.binary_join_element_wise(*pieces, "")
    return _data(lines, drop_last=1)


def pair_json_texts(things: np.ndarray, spec: JoinSpec, pairs: JoinedPairs) -> list[str]:
    """`pair_json_block` of pairs whose things are names (an object array), a text per pair."""
    if len(pairs) == 0:
        return []
    table = NameCodes()
    coded = CodedNames(table(things.tolist()), table.names)
    return pair_json_block(coded, spec, pairs).decode().split("\n")


def pair_json_lines(thing: str, spec: JoinSpec, pairs: JoinedPairs) -> list[str]:
    """The pairs one engine step of one thing emitted, one JSON text each."""
    return pair_json_texts(np.full(len(pairs), thing, dtype=object), spec, pairs)


def json_number_column(values: np.ndarray) -> pa.StringArray:
    """`formats.json_numbers` of a column as an Arrow string array, with no object per value.

    orjson writes the whole column (`OPT_SERIALIZE_NUMPY`: floats as it writes a Python float,
    non-finite ones as null); an integral value's ".0" goes, and numpy turns the comma-separated
    text into the array's offsets and data. Integral values of 2**53 and above keep their
    fraction (json_number does): such a column goes the way of `json_numbers`.
    """
    values = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 + 0.0 is 0.0: written "0"
    if len(values) == 0 or (np.abs(values) >= 2.0**53).any():
        return pa.array(json_numbers(values), pa.string())
    text = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1] + b","
    data = np.frombuffer(text, dtype=np.uint8)
    keep = data != _COMMA
    ends = np.flatnonzero(~keep)  # where each value's text ends
    integral = (data.take(ends - 1) == _ZERO) & (data.take(ends - 2) == _DOT)  # "….0"
    keep[ends[integral] - 1] = keep[ends[integral] - 2] = False
    offsets = np.zeros(len(ends) + 1, dtype=np.int32)
    # each value's end, less the commas and the ".0"s before it and its own
    offsets[1:] = ends - np.arange(len(ends)) - 2 * np.cumsum(integral)
    return pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data[keep]))


def _data(column: pa.StringArray, drop_last: int = 0) -> bytes:
    """The UTF-8 bytes of all values of a string column, one after the other, but the last
    `drop_last` bytes."""
    width = np.int64 if pa.types.is_large_string(column.type) else np.int32
    offsets = np.frombuffer(column.buffers()[1], dtype=width)
    first, last = int(offsets[column.offset]), int(offsets[column.offset + len(column)])
    last -= drop_last
    return column.buffers()[2][first:last].to_pybytes()
