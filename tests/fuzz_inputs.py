"""Hypothesis strategies of hostile input for the stages' entry points, and the dead-letter check.

`hostile(template)` draws one input value (bytes): random bytes, JSON nested thousands deep, huge
JSON, NaN/Infinity and out-of-range number literals, fields of the wrong type, unicode, oversize
payloads, or the `template` record itself (so that some inputs are accepted) — each a value a
stage must either take or dead-letter with a reason, without raising or stalling.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from statestream.codecs.bad_input import (
    DEAD_LETTER_FIELDS,
    LATE_FIELDS,
    RAW_LIMIT_BYTES,
    REASON_LIMIT_CHARS,
    STAGES,
)

FUZZ = settings(
    max_examples=60,
    deadline=None,  # a huge value takes a while to build; the test's own time is what counts
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Each fuzz test draws batches of inputs; 60 batches keep a test under ~10 s."""

_PLACEHOLDER = "\x00SPECIAL\x00"
special_numbers = st.sampled_from(
    [
        *("NaN", "Infinity", "-Infinity", "-0", "1e-400", "1e400", "-1e999"),
        *("1" + "0" * digits for digits in (309, 400, 4299)),  # an int no float can hold
        "-" + "9" * 4400,  # beyond Python's default limit of int digits
    ]
)
"""JSON number literals a decoder may mishandle: NaN/Infinity (no JSON, but Python's `json`
reads them), numbers beyond a double, integers beyond Python's default digit limit (4,300)."""

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _mutated(draw: st.DrawFn, template: dict[str, Any]) -> bytes:
    """`template` with one field dropped, of another type, or under a unicode name."""
    record = dict(template)
    name = draw(st.sampled_from(sorted(record)))
    how = draw(st.sampled_from(["drop", "value", "unicode_key", "extra"]))
    if how == "drop":
        del record[name]
    elif how == "value":
        record[name] = draw(json_values)
    elif how == "unicode_key":
        record[draw(st.text(min_size=1, max_size=10))] = record.pop(name)
    else:
        record[draw(st.text(max_size=10))] = draw(json_values)
    return json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


@st.composite
def _special(draw: st.DrawFn, template: dict[str, Any]) -> bytes:
    """`template` with a number field (or any) written as one of `special_numbers`."""
    numbers = sorted(k for k, v in template.items() if isinstance(v, int | float)) or sorted(
        template
    )
    record = {**template, draw(st.sampled_from(numbers)): _PLACEHOLDER}
    return json.dumps(record).replace(json.dumps(_PLACEHOLDER), draw(special_numbers)).encode()


def _deep(depth: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    if kind == "object":
        return b'{"a":' * depth + b"1" + b"}" * depth
    return b"[" * depth  # never closed


def _huge(size: int, template: dict[str, Any], kind: str) -> bytes:
    if kind == "array":
        return b"[" + b"1.5," * (size // 4) + b"0]"
    if kind == "string_field":
        name = sorted(template)[0]
        return json.dumps({**template, name: "x" * size}).encode()
    return json.dumps({**template, "padding": "é" * (size // 2)}).encode()


def hostile(template: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """One hostile input value around the record `template` (see the module)."""
    good = json.dumps(template).encode()
    return st.one_of(
        st.just(good),
        _mutated(template),
        _special(template),
        st.binary(max_size=200),
        st.text(max_size=60).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.builds(_deep, st.integers(500, 20_000), st.sampled_from(["list", "object", "open"])),
        st.builds(
            _huge,
            st.integers(70_000, 1_500_000),
            st.just(template),
            st.sampled_from(["array", "string_field", "padding"]),
        ),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.just(b""),
        st.just(good[: len(good) // 2]),
        st.just(good + b"\n" + good),
        st.just(b"\xef\xbb\xbf" + good),  # a UTF-8 byte order mark
    )


VP_EVENT: dict[str, Any] = {
    "desi": "52", "dir": "1", "oper": 22, "veh": 1234, "tst": "2026-11-25T06:15:30.123Z",
    "tsi": 1795587330, "spd": 8.3, "hdg": 120, "lat": 60.171, "long": 24.9414, "acc": 0.2,
    "dl": -5, "odo": 1234, "drst": 0, "oday": "2026-11-25", "jrn": 101, "line": 52,
    "start": "08:15", "loc": "GPS", "stop": None, "route": "1052", "occu": 0,
}  # fmt: skip
"""An HFP VP event's details, as HSL sends them."""
VP_TOPIC = "/hfp/v2/journey/ongoing/vp/bus/0022/01234/1052/1/Kamppi/08:15/1130446/2/60;24/19/74/11"


def hostile_vp() -> st.SearchStrategy[bytes]:
    """One hostile HFP payload: hostile as a whole, or `{"VP": <hostile details>}`, or another
    HFP event type."""

    def wrapped(details: bytes) -> bytes:
        return b'{"VP": ' + details + b"}"

    return st.one_of(
        hostile({"VP": VP_EVENT}),
        _mutated(VP_EVENT).map(wrapped),
        _special(VP_EVENT).map(wrapped),
        st.sampled_from(["DOO", "DOC", "ARS", "vp", ""]).map(
            lambda name: json.dumps({name: VP_EVENT}).encode()
        ),
        st.just(json.dumps({"VP": {**VP_EVENT, "lat": None, "long": None}}).encode()),
    )


def hfp_topics() -> st.SearchStrategy[str]:
    """One HFP topic: HSL's, one with a level changed, cut or added, or any text."""
    levels = VP_TOPIC.split("/")

    @st.composite
    def changed(draw: st.DrawFn) -> str:
        index = draw(st.integers(0, len(levels) - 1))
        new = list(levels)
        new[index] = draw(st.text(max_size=8).filter(lambda t: "#" not in t and "+" not in t))
        return "/".join(new)

    return st.one_of(
        st.just(VP_TOPIC),
        changed(),
        st.integers(1, len(levels)).map(lambda n: "/".join(levels[:n])),
        st.just(VP_TOPIC + "/extra/"),
        st.text(max_size=40),
    )


def check_dead_letter(record: dict[str, Any], stage: str, extra: tuple[str, ...] = ()) -> None:
    """Assert `record` has the one dead-letter shape of `stage` with a non-empty reason."""
    assert stage in STAGES
    assert list(record) == [*DEAD_LETTER_FIELDS, *extra], list(record)
    assert record["stage"] == stage
    assert isinstance(record["reason"], str) and record["reason"].strip()
    assert len(record["reason"]) <= REASON_LIMIT_CHARS
    assert len(json.dumps(record)) <= 6 * RAW_LIMIT_BYTES + 13 * REASON_LIMIT_CHARS  # fits Kafka
    assert record["raw_encoding"] in ("utf-8", "base64", None)


def check_late_record(record: dict[str, Any], stage: str) -> None:
    """Assert `record` has the one late-record shape of `stage`."""
    assert list(record)[: len(LATE_FIELDS)] == list(LATE_FIELDS)
    assert record["stage"] == stage and record["reason"] == "late"


def bad_values(
    template: dict[str, Any], *, time_field: str, number_field: str, wrap: str | None = None
) -> dict[str, bytes]:
    """Eleven kinds of bad input, by name, around `template`, a record a stage takes (inside
    `{wrap: …}` when given): each must be dead-lettered, and the stream go on."""

    def encoded(record: dict[str, Any]) -> bytes:
        return json.dumps({wrap: record} if wrap else record).encode()

    def literal(text: str) -> bytes:
        placeholder = encoded({**template, number_field: _PLACEHOLDER}).decode()
        return placeholder.replace(json.dumps(_PLACEHOLDER), text).encode()

    good = encoded(template)
    return {
        "empty": b"",
        "random_bytes": bytes(range(3, 256, 7)),
        "truncated_json": good[: len(good) // 2],
        "two_records": good + b"\n" + good,
        "not_an_object": b"[1, 2, 3]",
        "deeply_nested": _deep(5_000, "list"),
        "nan_literal": literal("NaN"),
        "beyond_double": literal("1e400"),
        "time_as_text": encoded({**template, time_field: "yesterday"}),
        "no_fields": encoded({}),
        "huge_array": encoded({**template, number_field: [1.5] * 20_000}),
    }


def raw_input(letter: dict[str, Any]) -> bytes | None:
    """The raw input a dead letter kept (cut at its limit when `truncated`)."""
    raw = letter["raw"]
    if raw is None:
        return None
    return base64.b64decode(raw) if letter["raw_encoding"] == "base64" else raw.encode()


def assert_each_dead_lettered(
    letters: list[dict[str, Any]], values: dict[str, bytes], stage: str, extra: tuple = ()
) -> list[dict[str, Any]]:
    """Every value of `values` has its own dead letter among `letters` (matched by its raw input
    and size), of `stage`'s shape with a reason; returns the letters left over."""
    left = list(letters)
    for kind, value in values.items():
        found = [letter for letter in left if _kept(letter, value)]
        assert found, f"no dead letter for the {kind} input"
        check_dead_letter(found[0], stage, extra)
        left.remove(found[0])
    return left


def _kept(letter: dict[str, Any], value: bytes) -> bool:
    """Whether `letter` is the dead letter of `value` (its raw input, cut or whole)."""
    raw = raw_input(letter)
    return raw is not None and letter["raw_bytes"] == len(value) and value.startswith(raw)


_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def json_depth(value: bytes) -> int:
    """How deep arrays and objects nest in the JSON text `value` (brackets in strings do not
    count), as an oracle's first look at a value a reader may find too deep."""
    codes = np.frombuffer(_STRINGS.sub(b'""', value), dtype=np.uint8)
    step = np.isin(codes, list(b"[{")).astype(np.int64) - np.isin(codes, list(b"]}"))
    return int(np.cumsum(step).max(initial=0))
