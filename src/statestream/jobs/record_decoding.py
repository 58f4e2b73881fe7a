"""Kafka rows of machine records → records, whatever envelope the connector wrote.

Spark hands the stateful processors each Kafka row as it is (key, value, partition, offset), and
they decode the values here, in the Python workers, from the rows of one call (`decode_rows`).
One decoder serves all three envelopes (`settings.ingest.envelope`, see
`statestream.ingest.envelope`):

- `none`: plain record JSON `{thing, quantity, phenomenonTime, result}`. A compiled loop reads
  the values in place from Arrow's buffers (`codecs.json_records`), with no Python object
  per record; the values it cannot vouch for go the per-value way below, which knows reasons;
- `json`: the `Event` envelope in protobuf's JSON mapping, value by value;
- `protobuf`: the `Event` envelope as protobuf binary, value by value.

A value that is no complete record gets the reason why, as does a record whose Kafka key is not
its `thing.quantity`: Spark groups rows by a bucket of the key's thing (`jobs.machine_input`), so a
record under another key could meet the state of another thing.

    >>> rows = pd.DataFrame({
    ...     "key": [b"R1.speed", b"R1.speed", b"R2.load"],
    ...     "value": [b'{"thing": "R1", "quantity": "speed", "phenomenonTime": 5, "result": 1.5}',
    ...               b'{"thing": "R1"', b'{"thing": "R1", "quantity": "speed",'
    ...               b' "phenomenonTime": 6, "result": 2}'],
    ...     "partition": [0, 0, 1], "offset": [7, 8, 3]})
    >>> records, rejects = decode_rows([rows], "none")
    >>> records.frame()[["thing", "quantity", "t", "v", "offset"]].values.tolist()
    [['R1', 'speed', 5.0, 1.5, 7]]
    >>> for reason in rejects["reason"]:
    ...     print(reason)
    bad JSON: Expecting ',' delimiter: line 1 column 15 (char 14)
    key 'R2.load' is not the record's thing.quantity R1.speed
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from statestream.codecs.bad_input import REJECT_COLUMNS
from statestream.codecs.formats import narrow_record
from statestream.codecs.json_records import scan_records
from statestream.codecs.kafka_rows import arrow_column, kafka_order
from statestream.join import CodedNames

RecordOrReason = tuple[str, str, float, float] | str


@dataclass(frozen=True)
class KafkaRecords:
    """The records of one call's Kafka rows, in Kafka order (partition, then offset): their
    things and quantities coded (names in order of their first record), times `t` (epoch ms),
    results `v`, Kafka positions; record i's Kafka value (for a dead letter) is `values[at[i]]`
    (the values as the rows came, not copied into Kafka order)."""

    things: CodedNames
    quantities: CodedNames
    t: np.ndarray
    v: np.ndarray
    partition: np.ndarray
    offset: np.ndarray
    values: pa.ChunkedArray
    at: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def row(self, i: int) -> dict[str, Any]:
        """Record i: thing, quantity, t, v, value (bytes), partition, offset."""
        return {
            "thing": self.things.names[self.things.codes[i]],
            "quantity": self.quantities.names[self.quantities.codes[i]],
            "t": float(self.t[i]),
            "v": float(self.v[i]),
            "value": self.values[int(self.at[i])].as_py(),
            "partition": int(self.partition[i]),
            "offset": int(self.offset[i]),
        }

    def frame(self) -> pd.DataFrame:
        """The records as a frame: thing, quantity (names), t, v, partition, offset."""
        return pd.DataFrame(
            {
                "thing": self.things.decoded(),
                "quantity": self.quantities.decoded(),
                "t": self.t,
                "v": self.v,
                "partition": self.partition,
                "offset": self.offset,
            },
            copy=False,
        )

    def rejected(self, rows: np.ndarray, reason: str) -> pd.DataFrame:
        """The records at the indices `rows` as rejects (`decode_rows`') with `reason`."""
        rows = np.asarray(rows, dtype=np.int64)
        return _rejects(
            [reason] * len(rows),
            self.values.take(pa.array(self.at[rows])).to_pylist(),
            self.partition[rows],
            self.offset[rows],
        )


def decode_rows(frames: Iterable[pd.DataFrame], envelope: str) -> tuple[KafkaRecords, pd.DataFrame]:
    """Kafka rows (frames of key, value, partition, offset, in any order) → (records, rejects),
    both in Kafka order; rejects: reason, raw (the Kafka value as it came, bytes or None:
    `statestream.codecs.bad_input.dead_letter` turns it into text), partition, offset.

    Keys and values may be Arrow-backed (`spark.patches.grouped_rows` gives them so) or Python
    objects (bytes; a key may be a str)."""
    if envelope not in _DECODERS:
        raise ValueError(f"unknown envelope {envelope!r}: none, json or protobuf")
    frames = list(frames)
    keys, values = (_joined([arrow_column(f[name]) for f in frames]) for name in ("key", "value"))
    partition, offset = (
        np.concatenate([f[name].to_numpy(dtype=np.int64) for f in frames] or [np.zeros(0, int)])
        for name in ("partition", "offset")
    )
    order = kafka_order(partition, offset)
    decoded = _Decoded(keys, values, envelope)
    good = decoded.good[order]
    rows, bad = order[good], order[~good]
    pairs, first = pd.factorize(decoded.pair[rows])  # pairs in order of their first record
    thing_of, things = _factorized([decoded.pair_things[k] for k in first.tolist()])
    quantity_of, quantities = _factorized([decoded.pair_quantities[k] for k in first.tolist()])
    records = KafkaRecords(
        things=CodedNames(thing_of[pairs], things, first_seen=True),
        quantities=CodedNames(quantity_of[pairs], quantities, first_seen=True),
        t=decoded.t[rows],
        v=decoded.v[rows],
        partition=partition[rows],
        offset=offset[rows],
        values=values,
        at=rows,
    )
    reasons = [decoded.reasons[i] for i in bad.tolist()]
    raw = values.take(pa.array(bad)).to_pylist()
    return records, _rejects(reasons, raw, partition[bad], offset[bad])


def _factorized(names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each name's code into the distinct names, in order of first sight: `pd.factorize`'s,
    which would take a string only up to its first NUL character ("m1" and "m1\\x00x" one name).

    >>> codes, names = _factorized(["m1", "m1\\x00x", "m1"])
    >>> codes.tolist(), names
    ([0, 1, 0], ['m1', 'm1\\x00x'])
    """
    index: dict[str, int] = {}
    codes = [index.setdefault(name, len(index)) for name in names]
    return np.array(codes, dtype=np.int64), list(index)


def _joined(arrays: list[pa.ChunkedArray]) -> pa.ChunkedArray:
    chunks = [chunk for array in arrays for chunk in array.chunks]
    return pa.chunked_array(chunks, type=pa.binary())


class _Decoded:
    """Every row of a call decoded, in the rows' order: `good`, and for a good row its `pair`
    (an index into `pair_things` and `pair_quantities`), `t` and `v`; for a bad one its reason
    (`reasons`, by row)."""

    def __init__(self, keys: pa.ChunkedArray, values: pa.ChunkedArray, envelope: str) -> None:
        n = len(values)
        self.reasons: dict[int, str] = {}
        self.pair_things: list[str] = []
        self.pair_quantities: list[str] = []
        if envelope == "none" and n:
            scanned = scan_records(values, keys)
            self.good, self.t, self.v = scanned.certain, scanned.t, scanned.v
            self.pair = self._pairs_of_keys(keys, scanned.thing_bytes)
        else:
            self.good = np.zeros(n, dtype=bool)
            self.t, self.v = np.full(n, np.nan), np.full(n, np.nan)
            self.pair = np.zeros(n, dtype=np.int64)
        self._decode_one_by_one(keys, values, envelope)

    def _pairs_of_keys(self, keys: pa.ChunkedArray, thing_bytes: np.ndarray) -> np.ndarray:
        """Each certain row's pair: its key's code; the thing is the key's first thing_bytes
        bytes. A row whose thing is cut elsewhere in the same key (a dot in the thing) than
        the one taken for that key goes one by one."""
        encoded = keys.dictionary_encode().combine_chunks()
        codes = encoded.indices.fill_null(0).to_numpy().astype(np.int64)  # no key: not certain
        names = encoded.dictionary.to_pylist()
        certain = np.flatnonzero(self.good)
        cut = np.full(len(names), -1, dtype=np.int64)  # -1: a key of no certain row
        cut[codes[certain]] = thing_bytes[certain]
        self.good[certain[cut[codes[certain]] != thing_bytes[certain]]] = False
        cuts = zip(names, cut.tolist(), strict=True)  # a certain row's key is UTF-8
        split = [
            (key[:k].decode(), key[k + 1 :].decode()) if k >= 0 else ("", "") for key, k in cuts
        ]
        self.pair_things = [thing for thing, _ in split]
        self.pair_quantities = [quantity for _, quantity in split]
        return codes

    def _decode_one_by_one(
        self, keys: pa.ChunkedArray, values: pa.ChunkedArray, envelope: str
    ) -> None:
        rows = np.flatnonzero(~self.good)
        if not len(rows):
            return
        taken = pa.array(rows)
        decode = _DECODERS[envelope]
        pair_codes: dict[tuple[str, str], int] = {}
        for i, key, value in zip(
            rows.tolist(), keys.take(taken).to_pylist(), values.take(taken).to_pylist(), strict=True
        ):
            record = decode(value)
            if isinstance(record, str):
                self.reasons[i] = record
                continue
            thing, quantity, self.t[i], self.v[i] = record
            wrong = _wrong_key(key, thing, quantity)
            if wrong is not None:
                self.reasons[i] = wrong
                continue
            self.good[i] = True
            pair = (thing, quantity)
            if pair not in pair_codes:
                pair_codes[pair] = len(self.pair_things)
                self.pair_things.append(thing)
                self.pair_quantities.append(quantity)
            self.pair[i] = pair_codes[pair]


def _wrong_key(key: bytes | None, thing: str, quantity: str) -> str | None:
    """Why `key` is not the record's key thing.quantity; None when it is."""
    expected = f"{thing}.{quantity}"
    if key is None:
        return f"no key: a record's key is its thing.quantity, here {expected}"
    if key == expected.encode("utf-8", "surrogatepass"):
        return None
    return f"key {_text(key)!r} is not the record's thing.quantity {expected}"


def _text(key: bytes) -> str:
    try:
        return key.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return key.decode("utf-8", "backslashreplace")


def _rejects(reasons, values, partitions, offsets) -> pd.DataFrame:
    """Rejects as `decode_rows` gives them: reason, raw (the Kafka value), partition, offset."""
    return pd.DataFrame(
        {"reason": reasons, "raw": values, "partition": partitions, "offset": offsets},
        columns=list(REJECT_COLUMNS),
    )


def _plain_json(value: bytes | None) -> RecordOrReason:
    obj = _json_object(value)
    return obj if isinstance(obj, str) else narrow_record(obj)


def _json_envelope(value: bytes | None) -> RecordOrReason:
    event = _json_object(value)
    if isinstance(event, str):
        return event
    details = event.get("machineRecord")
    if not isinstance(details, dict):
        return "not an Event with a machineRecord"
    time = event.get("eventTimeMs")
    # protobuf's JSON mapping writes int64 as a string of digits (ASCII ones: "²" is a digit too)
    if isinstance(time, str) and time.isascii() and time.isdigit():
        time = int(time)
    return narrow_record({**details, "phenomenonTime": time})


def _protobuf_envelope(value: bytes | None) -> RecordOrReason:
    from statestream.ingest.envelope import decode_event_fields

    fields = decode_event_fields(value)
    if fields[0] is None and fields[1] is None and fields[2] is None:
        return "not a protobuf Event with a MachineRecord"
    names = ("thing", "quantity", "phenomenonTime", "result")
    return narrow_record(dict(zip(names, fields, strict=True)))


def _json_object(value: bytes | None) -> dict[str, Any] | str:
    if value is None:
        return "empty message"
    try:
        obj = json.loads(value)
    except ValueError as exc:
        return f"bad JSON: {exc}"
    except RecursionError:  # json.loads recurses per level: thousands of nested arrays
        return "bad JSON: nested too deeply"
    return obj if isinstance(obj, dict) else "not a JSON object"


_DECODERS: dict[str, Callable[[bytes | None], RecordOrReason]] = {
    "none": _plain_json,
    "json": _json_envelope,
    "protobuf": _protobuf_envelope,
}
