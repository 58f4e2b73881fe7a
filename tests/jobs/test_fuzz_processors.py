"""Fuzzing the Spark stages' entry points without Spark: `decode_rows` for every envelope, and
one call of the join's and the statistics' stateful processors on hostile Kafka rows (their
state in memory). Every row is accepted or dead-lettered in the one shape; nothing raises.

Which rows are records (and which record) and which are refused for what is decided here by
`expected_record`: the documented contract of a Kafka value (`jobs.record_decoding`,
`json_records`: what `json.loads` then the narrow record's rules read; `ingest.envelope`),
written out without the code under test. The join's dead letters and late records follow from
it by the spec's rules (a value its function cannot take is malformed; a time below its
series' largest is late, with no allowed disorder).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import example, given
from hypothesis import strategies as st

from statestream.codecs.bad_input import dead_letter, to_json
from statestream.exactly_once.packed_rows import records
from statestream.ingest import MachineRecord, codec_for
from statestream.jobs.record_decoding import decode_rows
from statestream.join import SpecTemplate
from statestream.queries.join import OutputTopics
from statestream.queries.join.processor import ComplementJoinProcessor
from statestream.queries.stats import StatsTopics
from statestream.queries.stats.processor import PowerStatisticsProcessor
from statestream.stats import StatsSpec
from statestream.testing import InMemoryMapState
from tests.fuzz_inputs import FUZZ, check_dead_letter, check_late_record, hostile, json_depth

RECORD = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": 5000, "result": 1.5}
QUANTITIES = ("actSpeed_C11", "vaTorque_C11", "vaPower_C11", "vaPower_C12", "other")


@st.composite
def kafka_rows(draw: st.DrawFn, envelope: str = "none") -> pd.DataFrame:
    """Kafka rows (bucket, key, value, partition, offset): good records, some late, and hostile
    values under the right key, no key or another key."""
    codec = codec_for(envelope)
    values: list[bytes | None] = []
    keys: list[str | None] = []
    made: list[MachineRecord | None] = []  # the record a good row was made of
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            thing, quantity = draw(st.sampled_from(["R1", "R2"])), draw(st.sampled_from(QUANTITIES))
            time = draw(st.integers(0, 2_000_000))
            record = MachineRecord(thing, quantity, time, draw(st.floats(-1e6, 1e6)))
            values.append(codec.encode(record, 0))
            keys.append(record.key)
            made.append(record)
            continue
        values.append(draw(hostile(RECORD) | st.none()))
        keys.append(draw(st.sampled_from(["R1.vaTorque_C11", None, "R2.x"]) | st.text(max_size=9)))
        made.append(None)
    frame = _frame(keys, values)
    frame.attrs["made"] = made
    return frame


def _frame(keys: list[str | None], values: list[bytes | None]) -> pd.DataFrame:
    count = len(values)
    return pd.DataFrame(
        {
            "bucket": np.zeros(count, dtype=np.int32),
            "key": keys,
            "value": values,
            "partition": np.zeros(count, dtype=np.int32),
            "offset": np.arange(count, dtype=np.int64),
        }
    )


KNOWN = _frame(  # inputs that once crashed the decoders: RecursionError, OverflowError
    ["R1.q", "R1.q", "R1.q"],
    [
        b"[" * 5000 + b"]" * 5000,
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 1%s, "result": 1}' % (b"0" * 400),
        b'{"thing": "R1", "quantity": "q", "phenomenonTime": 1, "result": -1%s}' % (b"0" * 400),
    ],
)


Decoded = tuple[str, str, float, float]  # thing, quantity, time (ms), result
FIELDS = ("thing", "quantity", "phenomenonTime", "result")


def _nesting_limits() -> tuple[int, int]:
    """(surely read, surely too deep): `json.loads` recurses once per level of nesting, so
    Python's recursion limit less the caller's stack decides where a value is too deep (the
    limit is 1,000 in a Spark worker; Hypothesis raises it while it runs a test)."""
    limit, frames, frame = sys.getrecursionlimit(), 0, sys._getframe()
    while frame is not None:
        frames, frame = frames + 1, frame.f_back
    return limit - frames - 100, limit


def _number(value: Any) -> float | None:
    """A JSON number as a double (an integer beyond one is ±infinity); None for anything else,
    true and false included."""
    if type(value) is float:
        return value
    if type(value) is not int:
        return None
    try:
        return float(value)
    except OverflowError:  # as json.loads reads 1e400
        return math.inf if value > 0 else -math.inf


def _narrow(obj: dict[str, Any]) -> Decoded | set[str]:
    """A narrow record's four fields, or the fields it fails: each present and not null, thing
    and quantity non-empty strings, the time a finite number, the result a number."""
    missing = {name for name in FIELDS if obj.get(name) is None}
    if missing:
        return missing
    problems = {name for name in ("thing", "quantity") if not isinstance(obj[name], str)}
    problems |= {name for name in ("thing", "quantity") if obj[name] == ""}
    time, result = _number(obj["phenomenonTime"]), _number(obj["result"])
    if time is None or not math.isfinite(time):
        problems.add("phenomenonTime")
    if result is None:
        problems.add("result")
    return problems or (obj["thing"], obj["quantity"], time, result)


def _read_json(value: bytes) -> Any:
    """`value` as `json.loads` reads it (bytes: UTF-8, -16 or -32, a UTF-8 byte order mark
    skipped, NaN and Infinity read as numbers), with room for any depth below the recursion
    limit; raises ValueError if it is no JSON."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(2 * limit)
    try:
        return json.loads(value)
    finally:
        sys.setrecursionlimit(limit)


def _envelope_record(value: bytes, envelope: str) -> Decoded | set[str]:
    """The record a JSON value (`none` or `json` envelope) holds, or the kinds of its reason."""
    depth, (surely_read, too_deep) = json_depth(value), _nesting_limits()
    if depth >= too_deep:
        return {"json"}
    try:
        record = _record_of(_read_json(value), envelope)
    except ValueError:
        return {"json"}
    if depth > surely_read:  # read, or too deep
        assert isinstance(record, set), "the strategies make no deep record: no rule for one"
        return record | {"json"}
    return record


def _record_of(obj: Any, envelope: str) -> Decoded | set[str]:
    if not isinstance(obj, dict):
        return {"json"}
    if envelope == "json":  # {"eventTimeMs", "machineRecord": {thing, quantity, result}}
        details, time = obj.get("machineRecord"), obj.get("eventTimeMs")
        if not isinstance(details, dict):
            return {"event"}
        if isinstance(time, str) and time.isascii() and time.isdigit():  # int64 as a string
            time = int(time)
        obj = {**details, "phenomenonTime": time}
    return _narrow(obj)


def expected_record(
    key: str | None, value: bytes | None, envelope: str, made: MachineRecord | None = None
) -> Decoded | set[str] | None:
    """The record (thing, quantity, ms, result) that the Kafka row (`key`, `value`) must decode
    to, or the kinds of reason it may be refused with: "empty", "json" (no JSON object),
    "event" (no envelope with a record), "key" (not the record's thing.quantity) or the fields
    it fails. A protobuf value is judged by what it was `made` of (an `Event` of that record,
    whose zero time proto3 cannot tell from none), or, made of no record, is refused unless it
    holds the key's thing and quantity (None: this rule cannot tell)."""
    if value is None:  # a null Kafka value: no protobuf Event either
        return {"empty", "event"} if envelope == "protobuf" else {"empty"}
    if envelope == "protobuf":
        if made is None:
            parts = (key or "").encode()
            cuts = [k for k in range(len(parts)) if parts[k : k + 1] == b"."]
            if any(parts[:k] in value and parts[k + 1 :] in value for k in cuts):
                return None
            return {"event", "key", *FIELDS}
        fields = (made.thing or None, made.quantity or None, made.phenomenon_time_ms or None)
        record = _narrow({**dict(zip(FIELDS, fields, strict=False)), "result": made.result})
    else:
        record = _envelope_record(value, envelope)
    if isinstance(record, set):
        return record
    expected_key = f"{record[0]}.{record[1]}".encode("utf-8", "surrogatepass")
    return record if key is not None and key.encode() == expected_key else {"key"}


REASON_KINDS = [  # a reason's words → what it is about
    (r"empty message$", "empty"),
    (r"bad JSON|not a JSON object$", "json"),
    (r"not (an|a protobuf) Event with a (machineRecord|MachineRecord)$", "event"),
    (r"missing (thing|quantity|phenomenonTime|result)$", None),  # None: the field named
    (r"thing and quantity must be non-empty strings$", "thing quantity"),
    (r"(phenomenonTime) is not a number: ", None),
    (r"(result) of .* is not a number: ", None),
    (r"no key: |key .* is not the record's thing\.quantity ", "key"),
]


def reason_kinds(reason: str) -> set[str]:
    for pattern, kinds in REASON_KINDS:
        match = re.match(pattern, reason, re.DOTALL)
        if match:
            return set((kinds or match.group(1)).split())
    raise AssertionError(f"a reason of no known kind: {reason!r}")


def _expected(rows: pd.DataFrame, envelope: str) -> list[Decoded | set[str] | None]:
    made = rows.attrs.get("made") or [None] * len(rows)
    return [
        expected_record(key, value, envelope, record)
        for key, value, record in zip(rows["key"], rows["value"], made, strict=True)
    ]


def _same(got: Decoded, want: Decoded) -> bool:
    return got[:3] == want[:3] and (got[3] == want[3] or math.isnan(got[3]) == math.isnan(want[3]))


def _check_decoded(rows: pd.DataFrame, envelope: str) -> None:
    records, rejects = decode_rows([rows], envelope)
    decoded = records.frame()
    assert len(decoded) + len(rejects) == len(rows)
    assert sorted([*decoded["offset"], *rejects["offset"]]) == rows["offset"].tolist()
    got = {
        row.offset: (row.thing, row.quantity, row.t, row.v)
        for row in decoded.itertuples(index=False)
    }
    reasons = dict(zip(rejects["offset"], rejects["reason"], strict=True))
    for offset, want in enumerate(_expected(rows, envelope)):
        if want is None:
            continue
        if isinstance(want, set):
            assert offset in reasons, (rows["value"][offset], got.get(offset), want)
            assert reason_kinds(reasons[offset]) & want, (reasons[offset], want)
        else:
            assert offset in got, (rows["value"][offset], reasons.get(offset))
            assert _same(got[offset], want), (got[offset], want)
    for row in rejects.itertuples(index=False):
        letter = dead_letter("join", row.reason, row.raw, source_topic="t", offset=row.offset)
        check_dead_letter(json.loads(to_json(letter)), "join")


def _edited(**fields: Any) -> bytes:
    return json.dumps({**RECORD, **fields}).encode()


def _event(time: Any, details: Any = None) -> bytes:
    details = (
        {"thing": "R1", "quantity": "vaTorque_C11", "result": 1.5} if details is None else details
    )
    return json.dumps(
        {"eventTimeMs": time, "ingestionTimeMs": 0, "machineRecord": details}
    ).encode()


KEY = "R1.vaTorque_C11"
GOOD = ("R1", "vaTorque_C11", 5000.0, 1.5)
NAN = json.dumps(RECORD).replace("1.5", "NaN").encode()
EDGES: dict[str, list[tuple[str | None, bytes | None, Decoded | set[str]]]] = {
    # envelope → (key, value, the record or the kinds of reason), written by hand
    "none": [
        (KEY, json.dumps(RECORD).encode(), GOOD),
        (KEY, None, {"empty"}),
        (None, json.dumps(RECORD).encode(), {"key"}),
        ("R1.other", json.dumps(RECORD).encode(), {"key"}),
        ("R1.x.y", _edited(thing="R1.x", quantity="y"), ("R1.x", "y", 5000.0, 1.5)),
        (KEY, json.dumps(RECORD).replace('"R1"', '"R\\u0031"').encode(), GOOD),  # an escape
        (KEY, b'{"thing": "R2", ' + json.dumps(RECORD)[1:].encode(), GOOD),  # the last wins
        (KEY, b"\xef\xbb\xbf" + json.dumps(RECORD).encode(), GOOD),  # json.loads skips a BOM
        (KEY, _edited(result=True), {"result"}),  # a boolean is no number
        (KEY, _edited(result=None), {"result"}),
        (KEY, NAN, ("R1", "vaTorque_C11", 5000.0, math.nan)),  # the join's to refuse
        (KEY, _edited(result=10**400), ("R1", "vaTorque_C11", 5000.0, math.inf)),
        (KEY, _edited(phenomenonTime="5000"), {"phenomenonTime"}),
        (KEY, _edited(phenomenonTime=10**400), {"phenomenonTime"}),
        (KEY, _edited(thing=""), {"thing"}),
        (KEY, _edited(thing=5), {"thing"}),
        (KEY, _edited(phenomenonTime=4000), ("R1", "vaTorque_C11", 4000.0, 1.5)),  # late
        (KEY, json.dumps(RECORD).encode(), GOOD),  # a duplicate
        (KEY, b"[1, 2]", {"json"}),
        (KEY, b"", {"json"}),
        (KEY, json.dumps(RECORD).encode() * 2, {"json"}),
        (KEY, b"[" * 5000 + b"]" * 5000, {"json"}),
    ],
    "json": [
        (KEY, _event(5000), GOOD),
        (KEY, _event("5000"), GOOD),  # int64 as protobuf's JSON mapping may write it
        (KEY, _event(0), ("R1", "vaTorque_C11", 0.0, 1.5)),
        (KEY, _event("5e3"), {"phenomenonTime"}),
        (KEY, _event(None), {"phenomenonTime"}),
        (KEY, _event(5000, [1]), {"event"}),
        (KEY, json.dumps(RECORD).encode(), {"event"}),
        (None, _event(5000), {"key"}),
    ],
    "protobuf": [
        (KEY, None, {"empty", "event"}),
        (KEY, b"\x00\x01", {"event", "key", *FIELDS}),
    ],
}


def _edge_frame(envelope: str) -> pd.DataFrame:
    keys, values, _ = zip(*EDGES[envelope], strict=True)
    return _frame(list(keys), list(values))


def _protobuf_edges() -> pd.DataFrame:
    """`EDGES["protobuf"]` and `Event`s of records, one with the zero time proto3 drops."""
    codec, made = codec_for("protobuf"), [None] * len(EDGES["protobuf"])
    records = [MachineRecord("R1", "vaTorque_C11", t, 1.5) for t in (5000, 0)]
    frame = _frame(
        [*(k for k, _, _ in EDGES["protobuf"]), KEY, KEY],
        [*(v for _, v, _ in EDGES["protobuf"]), *(codec.encode(r, 0) for r in records)],
    )
    frame.attrs["made"] = [*made, *records]
    return frame


def test_the_rule_decides_the_edges_as_written_by_hand() -> None:
    for envelope, edges in EDGES.items():
        for key, value, want in edges:
            got = expected_record(key, value, envelope)
            if isinstance(want, set):
                assert got == want, (envelope, value, got)
            else:
                assert isinstance(got, tuple) and _same(got, want), (envelope, value, got)
    made = _protobuf_edges().attrs["made"]
    assert expected_record(KEY, b"", "protobuf", made[-2]) == GOOD
    assert expected_record(KEY, b"", "protobuf", made[-1]) == {"phenomenonTime"}


@FUZZ
@given(kafka_rows("none"))
@example(KNOWN)
@example(_edge_frame("none"))
def test_decode_rows_accepts_or_rejects_every_plain_json_value(rows: pd.DataFrame) -> None:
    _check_decoded(rows, "none")


@FUZZ
@given(kafka_rows("json"))
@example(KNOWN)
@example(_edge_frame("json"))
def test_decode_rows_accepts_or_rejects_every_json_envelope(rows: pd.DataFrame) -> None:
    _check_decoded(rows, "json")


@FUZZ
@given(kafka_rows("protobuf"))
@example(_protobuf_edges())
def test_decode_rows_accepts_or_rejects_every_protobuf_envelope(rows: pd.DataFrame) -> None:
    _check_decoded(rows, "protobuf")


class _MemoryHandle:
    def getMapState(self, *_: Any) -> InMemoryMapState:
        return InMemoryMapState()


def _call(processor: Any, calls: list[pd.DataFrame]) -> list[tuple[dict, list]]:
    """The figures and the (topic, key, value) records of each call, state kept between calls."""
    processor.init(_MemoryHandle())
    outputs = []
    for rows in calls:
        [frame] = list(processor.handleInputRows((0,), iter([rows]), None))
        figures = frame[frame["kind"] == "figures"].iloc[0].to_dict()
        packed = frame[frame["kind"] != "figures"]
        sent = [
            (kind, topic, value)
            for kind, row in zip(packed["kind"], packed.itertuples(index=False), strict=True)
            for topic, _, value in records(row.topic, row.keys, row.values)
        ]
        outputs.append((figures, sent))
    return outputs


@FUZZ
@given(st.lists(kafka_rows("none"), min_size=1, max_size=3))
@example([KNOWN])
@example([_edge_frame("none"), _edge_frame("none")])
def test_the_join_processor_dead_letters_or_takes_every_row(calls: list[pd.DataFrame]) -> None:
    topics = OutputTopics("out", "late", "dead", "machine.data")
    processor = ComplementJoinProcessor([SpecTemplate()], topics)
    largest: dict[tuple[str, str], float] = {}  # per series, its largest time so far
    for rows, (figures, sent) in zip(calls, _call(processor, calls), strict=True):
        assert figures["records"] == len(rows)
        dead = [json.loads(v) for kind, topic, v in sent if kind == "malformed"]
        late = [json.loads(v) for kind, topic, v in sent if kind == "late"]
        for letter in dead:
            check_dead_letter(letter, "join")
            assert letter["source_topic"] == "machine.data"
        for record in late:
            check_late_record(record, "join")
        offsets = [d["offset"] for d in dead]
        assert len(set(offsets)) == len(offsets)
        want_dead, want_late = _dead_and_late(_expected(rows, "none"), largest)
        assert set(offsets) == want_dead
        late_offsets = [r["offset"] for r in late]
        assert len(set(late_offsets)) == len(late_offsets) and set(late_offsets) == want_late


JOINED = re.compile(r"(actSpeed|vaTorque)_.+")  # the quantities `SpecTemplate()` joins


def _dead_and_late(
    expected: list[Decoded | set[str] | None], largest: dict[tuple[str, str], float]
) -> tuple[set[int], set[int]]:
    """The offsets a join of the power template must dead-letter and report late, in Kafka
    order: refused values; joined records whose result is no finite number (power takes none);
    joined records below their series' largest time so far (`largest`, updated)."""
    dead, late = set(), set()
    for offset, want in enumerate(expected):
        if isinstance(want, set):
            dead.add(offset)
            continue
        assert want is not None
        thing, quantity, time, result = want
        if not JOINED.fullmatch(quantity):
            continue
        if not math.isfinite(result):
            dead.add(offset)
            continue
        series = (thing, quantity)
        if time < largest.get(series, -math.inf):
            late.add(offset)
        largest[series] = max(time, largest.get(series, -math.inf))
    return dead, late


@FUZZ
@given(st.lists(kafka_rows("none"), min_size=1, max_size=3))
@example([KNOWN])
def test_the_stats_processor_dead_letters_or_takes_every_row(calls: list[pd.DataFrame]) -> None:
    topics = StatsTopics("stats", "alerts", "late", "dead", "machine.out")
    processor = PowerStatisticsProcessor(StatsSpec(), "vaPower_{c}", topics)
    for rows, (figures, sent) in zip(calls, _call(processor, calls), strict=True):
        dead = [json.loads(v) for kind, topic, v in sent if kind == "malformed"]
        late = [json.loads(v) for kind, topic, v in sent if kind == "late"]
        for letter in dead:
            check_dead_letter(letter, "stats")
            assert letter["source_topic"] == "machine.out"
        for record in late:
            check_late_record(record, "stats")
        assert figures["records"] == len(rows)
        assert (figures["malformed"], figures["late"]) == (len(dead), len(late))
        taken = figures["records"] - figures["malformed"]  # power records, late and other
        assert taken + len(dead) == len(rows) and figures["late"] + figures["other"] <= taken
