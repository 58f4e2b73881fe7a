"""Fuzzing the Spark stages' entry points without Spark: `decode_rows` for every envelope, and
one call of the join's and the statistics' stateful processors on hostile Kafka rows (their
state in memory). Every row is accepted or dead-lettered in the one shape; nothing raises."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import example, given
from hypothesis import strategies as st

from statestream.bad_input import dead_letter, to_json
from statestream.ingest import MachineRecord, codec_for
from statestream.jobs.join_processor import ComplementJoinProcessor, OutputTopics
from statestream.jobs.output_rows import records
from statestream.jobs.record_decoding import decode_rows
from statestream.jobs.stats_processor import PowerStatisticsProcessor, StatsTopics
from statestream.join import SpecTemplate
from statestream.stats import StatsSpec
from statestream.testing import InMemoryMapState
from tests.fuzz_inputs import FUZZ, check_dead_letter, check_late_record, hostile

RECORD = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": 5000, "result": 1.5}
QUANTITIES = ("actSpeed_C11", "vaTorque_C11", "vaPower_C11", "vaPower_C12", "other")


@st.composite
def kafka_rows(draw: st.DrawFn, envelope: str = "none") -> pd.DataFrame:
    """Kafka rows (bucket, key, value, partition, offset): good records, some late, and hostile
    values under the right key, no key or another key."""
    codec = codec_for(envelope)
    values: list[bytes | None] = []
    keys: list[str | None] = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            thing, quantity = draw(st.sampled_from(["R1", "R2"])), draw(st.sampled_from(QUANTITIES))
            time = draw(st.integers(0, 2_000_000))
            record = MachineRecord(thing, quantity, time, draw(st.floats(-1e6, 1e6)))
            values.append(codec.encode(record, 0))
            keys.append(record.key)
            continue
        values.append(draw(hostile(RECORD) | st.none()))
        keys.append(draw(st.sampled_from(["R1.vaTorque_C11", None, "R2.x"]) | st.text(max_size=9)))
    return _frame(keys, values)


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


def _check_decoded(rows: pd.DataFrame, envelope: str) -> None:
    records, rejects = decode_rows([rows], envelope)
    decoded = records.frame()
    assert len(decoded) + len(rejects) == len(rows)
    assert sorted([*decoded["offset"], *rejects["offset"]]) == rows["offset"].tolist()
    assert np.isfinite(decoded["t"].to_numpy(dtype=np.float64)).all()
    assert (decoded["thing"] + "." + decoded["quantity"]).tolist() == [
        rows["key"][i] for i in decoded["offset"]
    ]
    for row in rejects.itertuples(index=False):
        letter = dead_letter("join", row.reason, row.raw, source_topic="t", offset=row.offset)
        check_dead_letter(json.loads(to_json(letter)), "join")


@FUZZ
@given(kafka_rows("none"))
@example(KNOWN)
def test_decode_rows_accepts_or_rejects_every_plain_json_value(rows: pd.DataFrame) -> None:
    _check_decoded(rows, "none")


@FUZZ
@given(kafka_rows("json"))
@example(KNOWN)
def test_decode_rows_accepts_or_rejects_every_json_envelope(rows: pd.DataFrame) -> None:
    _check_decoded(rows, "json")


@FUZZ
@given(kafka_rows("protobuf"))
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
def test_the_join_processor_dead_letters_or_takes_every_row(calls: list[pd.DataFrame]) -> None:
    topics = OutputTopics("out", "late", "dead", "machine.data")
    processor = ComplementJoinProcessor([SpecTemplate()], topics)
    for rows, (figures, sent) in zip(calls, _call(processor, calls), strict=True):
        assert figures["records"] == len(rows)
        _, rejects = decode_rows([rows], "none")
        dead = [json.loads(v) for kind, topic, v in sent if kind == "malformed"]
        late = [json.loads(v) for kind, topic, v in sent if kind == "late"]
        for letter in dead:
            check_dead_letter(letter, "join")
            assert letter["source_topic"] == "machine.data"
        for record in late:
            check_late_record(record, "join")
        offsets = [d["offset"] for d in dead]
        assert len(set(offsets)) == len(offsets) and set(rejects["offset"]) <= set(offsets)
        assert not set(offsets) & {r["offset"] for r in late}
        assert len(dead) + len(late) <= len(rows)


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
