"""A joined pair in the spec's output format: the one writer of pairs' JSON.

    {"thing": "R1", "quantity": "vaPower_C11", "phenomenonTime": <time>, "result": <result>,
     "left": {"quantity": "actSpeed_C11", "phenomenonTime": <t>, "result": <v>},
     "right": {"quantity": "vaTorque_C11", "phenomenonTime": <t>, "result": <v>}}

Numbers are written as `formats.json_number` writes one (integral values without a fraction,
non-finite ones as null, others in orjson's shortest text). A batch's pairs are written into one
block of UTF-8 lines by one compiled loop (`json_lines`): no Python object per pair or number.

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

from statestream.codecs.json_lines import json_lines
from statestream.join import CodedNames, JoinedPairs, JoinSpec
from statestream.join.names import NameCodes


def pair_json_block(things: CodedNames, spec: JoinSpec, pairs: JoinedPairs) -> bytes:
    """The pairs (`things`: each pair's thing) as JSON texts, one a line, no newline after the
    last: the block that `exactly_once.packed_rows` packs. Empty without pairs."""
    if len(pairs) == 0:
        return b""
    heads = [
        f'{{"thing": {json.dumps(name)}, "quantity": {json.dumps(spec.result)}, '.encode()
        for name in things.names
    ]
    left = f'"left": {{"quantity": {json.dumps(spec.left)}, "phenomenonTime": '
    right = f'"right": {{"quantity": {json.dumps(spec.right)}, "phenomenonTime": '
    texts = ['"phenomenonTime": ', ', "result": ', f", {left}", ', "result": ']
    texts += [f"}}, {right}", ', "result": ', "}}"]
    numbers = [pairs.time, pairs.result, pairs.left_t, pairs.left_v, pairs.right_t, pairs.right_v]
    return json_lines(heads, things.codes, [text.encode() for text in texts], numbers)


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
