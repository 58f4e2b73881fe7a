"""The chaos checks' keys: a record made by the connector's processor and the same record read
back as JSON have one key; the offline join's pairs, written in any pieces, give one key per
pair and one per InfluxDB point."""

from __future__ import annotations

import io
import json

import numpy as np

from statestream.chaos.keys import _PairKeys, pair_hash, point_hash, record_hash, row_keys
from statestream.ingest import SAMPLE_FILE
from statestream.ingest.base import RawEvent
from statestream.ingest.machine_data import MachineRowProcessor
from statestream.ingest.replay import file_lines
from statestream.join import SpecTemplate
from statestream.offline_join import join_lines

TOPIC = "factory/machines"


def _rows(count: int) -> list[bytes]:
    return [line for line, _ in zip(file_lines(SAMPLE_FILE), range(count), strict=False)]


def _records(rows: list[bytes]) -> list[dict]:
    processor = MachineRowProcessor()
    made = [r for row in rows for r in processor.process(RawEvent(row, TOPIC, 0))]
    return [  # as machine.data's JSON (the envelope's JSON form)
        {
            "thing": r.thing,
            "quantity": r.quantity,
            "phenomenonTime": r.phenomenon_time_ms,
            "result": r.result,
        }
        for r in made
    ]


def test_a_row_s_records_have_the_keys_their_json_has() -> None:
    rows = [*_rows(50), b"not a row"]
    keys, row_of = row_keys(rows, TOPIC)
    records = _records(rows[:50])
    assert keys.tolist() == [record_hash(r) for r in records]
    assert len(set(keys.tolist())) == len(keys)  # distinct records, distinct keys
    assert row_of.max() == 49 and np.all(np.diff(row_of) >= 0)


def test_pair_keys_are_the_same_however_the_lines_are_cut() -> None:
    lines = [json.dumps(r).encode() + b"\n" for r in _records(_rows(400))]
    whole = io.StringIO()
    join_lines(
        lines,
        [*SpecTemplate().specs_for(["actSpeed_C11", "vaTorque_C11"])],
        whole,
        io.StringIO,
        flush=False,
    )
    pairs = [json.loads(line) for line in whole.getvalue().splitlines()]
    assert pairs
    text = whole.getvalue()
    keys = _PairKeys()
    for start in range(0, len(text), 37):  # pieces that cut lines anywhere
        keys.write(text[start : start + 37])
    assert list(keys.pairs) == [pair_hash(p) for p in pairs]
    points = [
        point_hash(p["thing"], p["quantity"], round(p["phenomenonTime"] * 1000)) for p in pairs
    ]
    assert list(keys.points) == points
