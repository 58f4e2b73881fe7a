"""The golden files of the exactly-once formats, and how the packed rows' file is written.

`golden/packed_rows.bin` holds the packed rows that `OutputRows` makes of `golden_rows()`: for
each row (the figures row last) its columns kind, topic, count (decimal), keys and values, each
as a 4-byte big-endian length and its bytes (the framing is the file's, not the format's: the
JVM gets the rows' columns from Spark). `golden/packed_rows.json` holds the packed columns'
schema and, per row, the records (key, value as text) it encodes. `golden/commit_marker.json` is
a commit marker as the JVM writes it (`ExactlyOnceKafkaSink.markerKey` / `markerValue`).

Rewrite the packed rows' files only when the format changes on purpose, and the JVM's
`TransactionalPartition.unpack` with it: `python -m tests.exactly_once.golden_files`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import PACKED_COLUMNS, OutputRows, records

GOLDEN = Path(__file__).parent / "golden"
PACKED_ROWS = GOLDEN / "packed_rows.bin"
PACKED_RECORDS = GOLDEN / "packed_rows.json"
COMMIT_MARKER = GOLDEN / "commit_marker.json"
FIELDS = ("kind", "topic", "count", "keys", "values")


def golden_rows() -> pd.DataFrame:
    """Packed rows of every shape a processor makes: keyed runs, keys that come back, a null key,
    a pre-packed block, non-ASCII keys and values, escapes in JSON text, two topics of a kind."""
    rows = OutputRows()
    rows.add_many(
        "pair", "machine.out", "R1.vaPower_C11", ['{"thing":"R1","result":6}', '{"result":12.5}']
    )
    keys = np.array(["R2.p", "R2.p", 'Mä"3.p', "R2.p"], dtype=object)
    rows.add_runs("pair", "machine.out", keys, ['{"n":1}', '{"n":2}', '{"n":"ü"}', '{"n":4}'])
    rows.add("late", "machine.late", None, '{"reason":"late","raw":"{\\"a\\":\\"x\\\\ny\\"}"}')
    block = '{"cell":"8a"}\n{}\n{"at":"Zürich 🚌"}'.encode()
    rows.add_block("cells", "vehicle.cells", [("v1", 1), (None, 2)], block)
    rows.add("late", "vehicle.late", "v1", "[]")
    return rows.frame({"records": 9}, "records long")


def encode(frame: pd.DataFrame) -> bytes:
    """The packed rows' columns in the golden file's framing."""
    out = bytearray()
    for row in frame[list(FIELDS)].itertuples(index=False):
        kind, topic, count, keys, values = row
        for field in (kind.encode(), topic.encode(), str(count).encode(), keys.encode(), values):
            out += len(field).to_bytes(4, "big") + bytes(field)
    return bytes(out)


def decode(data: bytes) -> list[dict[str, Any]]:
    """The rows of the golden file: kind, topic, count, keys (str) and values (bytes)."""
    rows, fields, at = [], [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        fields.append(data[at + 4 : at + 4 + size])
        at += 4 + size
        if len(fields) == len(FIELDS):
            kind, topic, count, keys, values = fields
            rows.append(
                {
                    "kind": kind.decode(),
                    "topic": topic.decode(),
                    "count": int(count),
                    "keys": keys.decode(),
                    "values": values,
                }
            )
            fields = []
    if fields:
        raise ValueError(f"{len(fields)} fields of a row left at the end of the file")
    return rows


def expected_records(frame: pd.DataFrame) -> dict[str, Any]:
    """The JSON of the golden rows: the packed columns' schema, and each row's records."""
    rows = [
        {
            "kind": kind,
            "topic": topic,
            "count": int(count),
            "records": [
                [key, value.decode()] for _, key, value in records(topic, keys, bytes(values))
            ]
            if topic
            else [],
        }
        for kind, topic, count, keys, values in frame[list(FIELDS)].itertuples(index=False)
    ]
    return {"columns": PACKED_COLUMNS, "rows": rows}


def write_packed_rows() -> None:
    frame = golden_rows()
    PACKED_ROWS.write_bytes(encode(frame))
    text = json.dumps(expected_records(frame), indent=2, ensure_ascii=False)
    PACKED_RECORDS.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_packed_rows()
