"""The machine-data processor: one wide row in, one record per quantity out.

A machine publishes its state as one JSON object per message, `{"Thing": "R0815", "Timestamp":
1554096380468, "vaTorque_C11": -4.44, …, "id": …}`. Each quantity becomes a `MachineRecord`
(key `thing.quantity`, time in epoch ms). The row is read by `formats.read_wide_row`, the one
reader of wide rows, so the rules are the offline join's: a Timestamp in s, µs or ns is
normalised to ms, one that cannot be a time is rejected. A message with any problem is rejected
as a whole (to the dead-letter topic, with the reason), so no row is ever half ingested.

    >>> event = RawEvent(b'{"Thing": "R1", "Timestamp": 1554096380, "vaLoad_C11": 1.5}', "t", 0)
    >>> [(r.key, r.phenomenon_time_ms, r.result) for r in MachineRowProcessor().process(event)]
    [('R1.vaLoad_C11', 1554096380000, 1.5)]
"""

from __future__ import annotations

import orjson

from statestream.codecs.formats import MalformedRow, read_wide_row
from statestream.ingest.base import EventRejected, MachineRecord, Processor, RawEvent


class MachineRowProcessor(Processor):
    """Wide machine row → one `MachineRecord` per quantity, in the row's key order."""

    def __init__(self) -> None:
        self.normalised_times = 0  # rows whose Timestamp was not in ms

    def process(self, event: RawEvent) -> list[MachineRecord]:
        try:
            obj = orjson.loads(event.payload)
        except orjson.JSONDecodeError as exc:  # invalid UTF-8, NaN and Infinity included
            raise EventRejected("bad_json", f"bad JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise EventRejected("not_a_row", "not a JSON object")
        try:
            row = read_wide_row(obj)
        except MalformedRow as exc:
            raise EventRejected(exc.kind, str(exc)) from None
        if row.problems:
            raise EventRejected("bad_value", "; ".join(row.problems))
        if row.time_unit != "ms":
            self.normalised_times += 1
        thing, time_ms = row.thing, row.time_ms
        return [MachineRecord(thing, quantity, time_ms, value) for quantity, value in row.values]

    def notes(self) -> list[str]:
        if not self.normalised_times:
            return []
        return [f"{self.normalised_times:,} Timestamps normalised to ms"]
