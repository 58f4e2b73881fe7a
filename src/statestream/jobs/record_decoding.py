"""Kafka rows of machine records → columns, whatever envelope the connector wrote.

Spark hands the stateful processors each Kafka row as it is (key, value, partition, offset), and
they decode the values here, in Python: a JSON decoder in C over a batch costs a third of Spark's
`from_json` in the JVM, and one decoder serves all three envelopes (`settings.ingest.envelope`,
see `statestream.ingest.envelope`):

- `none`: plain record JSON `{thing, quantity, phenomenonTime, result}`;
- `json`: the `Event` envelope in protobuf's JSON mapping;
- `protobuf`: the `Event` envelope as protobuf binary.

A value that is no complete record gets the reason why, as does a record whose Kafka key is not
its `thing.quantity`: Spark groups rows by a bucket of the key's thing (`jobs.records`), so a
record under another key could meet the state of another thing.

    >>> rows = pd.DataFrame({
    ...     "key": ["R1.speed", "R1.speed", "R2.load"],
    ...     "value": [b'{"thing": "R1", "quantity": "speed", "phenomenonTime": 5, "result": 1.5}',
    ...               b'{"thing": "R1"', b'{"thing": "R1", "quantity": "speed",'
    ...               b' "phenomenonTime": 6, "result": 2}'],
    ...     "partition": [0, 0, 1], "offset": [7, 8, 3]})
    >>> records, rejects = decode_rows(rows, "none")
    >>> records[["thing", "quantity", "t", "v", "offset"]].values.tolist()
    [['R1', 'speed', 5.0, 1.5, 7]]
    >>> for reason in rejects["reason"]:
    ...     print(reason)
    bad JSON: Expecting ',' delimiter: line 1 column 15 (char 14)
    key 'R2.load' is not the record's thing.quantity R1.speed
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from statestream.formats import narrow_record


class _PlainRecord(msgspec.Struct, gc=False):
    """A good plain record as the fast path reads it: other fields are skipped, and a time or
    result may be written as an integer."""

    thing: str
    quantity: str
    phenomenonTime: float
    result: float


_PLAIN_RECORD = msgspec.json.Decoder(_PlainRecord)
_FIELDS = [attrgetter(name) for name in ("thing", "quantity", "phenomenonTime", "result")]

RecordOrReason = tuple[str, str, float, float] | str


def decode_rows(rows: pd.DataFrame, envelope: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kafka rows (key, value, partition, offset) → (records, rejects), both in the rows' order.

    records: thing, quantity, t (epoch ms), v, partition, offset, value (the Kafka value, for a
    dead-letter record later); rejects: reason, raw (the Kafka value as it came, bytes or None:
    `statestream.bad_input.dead_letter` turns it into text), partition, offset.
    """
    values = rows["value"].to_numpy(dtype=object)
    decoded = decode_values(values, envelope)
    reason = decoded.pop("reason")
    reason = _key_mismatches(rows["key"].to_numpy(dtype=object), decoded, reason)
    ok = np.equal(reason, None)
    every = slice(None) if ok.all() else ok  # the usual case: no copy of every column
    position = {"partition": rows["partition"].to_numpy(), "offset": rows["offset"].to_numpy()}
    records = pd.DataFrame(
        {
            **{name: column[every] for name, column in decoded.items()},
            **{name: column[every] for name, column in position.items()},
            "value": values[every],
        },
        copy=False,
    )
    rejects = _rejects(
        reason[~ok], values[~ok], position["partition"][~ok], position["offset"][~ok]
    )
    return records, rejects


def rejected(records: pd.DataFrame, mask: np.ndarray, reason: str) -> pd.DataFrame:
    """The `records` (of `decode_rows`) where `mask` is set, as rejects with `reason`."""
    chosen = records[mask]
    return _rejects(
        [reason] * len(chosen),
        chosen["value"].to_numpy(dtype=object),
        chosen["partition"].to_numpy(),
        chosen["offset"].to_numpy(),
    )


def _rejects(reasons, values, partitions, offsets) -> pd.DataFrame:
    """Rejects as `decode_rows` gives them: reason, raw (the Kafka value), partition, offset."""
    return pd.DataFrame(
        {
            "reason": reasons,
            "raw": values,
            "partition": partitions,
            "offset": offsets,
        }
    )


def decode_values(values: Sequence[bytes | None], envelope: str) -> dict[str, np.ndarray]:
    """Columns thing, quantity, t, v and reason (None for a record) of Kafka values."""
    if envelope not in _DECODERS:
        raise ValueError(f"unknown envelope {envelope!r}: none, json or protobuf")
    if envelope == "none":
        fast = _plain_json_columns(values)
        if fast is not None:
            return fast
    return _columns([_DECODERS[envelope](value) for value in values])


def _plain_json_columns(values: Sequence[bytes | None]) -> dict[str, np.ndarray] | None:
    """The fast path for plain JSON: the columns when every value is a good record, else None.

    msgspec decodes each value straight into the four typed fields (strict JSON; a boolean, null
    or text where a number belongs, a missing field or a value that is no object fails it), one
    C call per value, ~0.5 µs a record less than a dict per value from orjson; anything it
    refuses, and empty names or an infinite time, go the slow way, value by value, with reasons.
    """
    count = len(values)
    if count == 0:
        return _columns([])
    try:
        records = list(map(_PLAIN_RECORD.decode, values))
    except (msgspec.DecodeError, ValueError, TypeError, RecursionError):
        return None  # e.g. a None value (TypeError), nesting past msgspec's depth limit
    things, quantities = (
        np.fromiter(map(field, records), dtype=object, count=count) for field in _FIELDS[:2]
    )
    t, v = (
        np.fromiter(map(field, records), dtype=np.float64, count=count) for field in _FIELDS[2:]
    )
    if (things == "").any() or (quantities == "").any() or not np.isfinite(t).all():
        return None
    return {
        "thing": things,
        "quantity": quantities,
        "t": t,
        "v": v,
        "reason": np.full(count, None, dtype=object),
    }


def _columns(decoded: list[RecordOrReason]) -> dict[str, np.ndarray]:
    count = len(decoded)
    columns: dict[str, np.ndarray] = {
        "thing": np.full(count, None, dtype=object),
        "quantity": np.full(count, None, dtype=object),
        "t": np.full(count, np.nan),
        "v": np.full(count, np.nan),
        "reason": np.full(count, None, dtype=object),
    }
    for i, item in enumerate(decoded):
        if isinstance(item, str):
            columns["reason"][i] = item
        else:
            columns["thing"][i], columns["quantity"][i], columns["t"][i], columns["v"][i] = item
    return columns


def _key_mismatches(
    keys: np.ndarray, decoded: dict[str, np.ndarray], reason: np.ndarray
) -> np.ndarray:
    """`reason`, plus a reason for each record whose key is not its thing.quantity."""
    ok = np.flatnonzero(np.equal(reason, None))
    wrong = ok[keys[ok] != _thing_quantities(decoded["thing"][ok], decoded["quantity"][ok])]
    if not len(wrong):
        return reason
    reason = reason.copy()
    for i, key in zip(wrong, keys[wrong], strict=True):
        expected_key = f"{decoded['thing'][i]}.{decoded['quantity'][i]}"
        if key is None:
            reason[i] = f"no key: a record's key is its thing.quantity, here {expected_key}"
        else:
            reason[i] = f"key {key!r} is not the record's thing.quantity {expected_key}"
    return reason


def _thing_quantities(things: np.ndarray, quantities: np.ndarray) -> np.ndarray:
    """`thing.quantity` of each record, the text of each distinct pair made once (half the
    time of joining the columns, which makes two new texts per record)."""
    thing_codes, thing_names = pd.factorize(things)
    quantity_codes, quantity_names = pd.factorize(quantities)
    count = len(quantity_names)
    pairs, distinct = pd.factorize(thing_codes * count + quantity_codes)
    texts = [f"{thing_names[p // count]}.{quantity_names[p % count]}" for p in distinct.tolist()]
    return np.array(texts, dtype=object).take(pairs)


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
    if isinstance(time, str) and time.isdigit():  # protobuf's JSON mapping writes int64 so
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
