"""The JSON shapes of statestream's records.

In: a *narrow* machine record `{"thing", "quantity", "phenomenonTime", "result"}` (the seed's
Kafka record) or a *wide* row `{"Thing", "Timestamp", <quantity>: <value>, …}` (the seed's sample
file), which stands for one narrow record per quantity, in the row's key order.
Out: a joined pair in the spec's output format, written by `statestream.codecs.pair_json`.

`read_wide_row` is the one reader of wide rows: the offline join, the Spark join's reasons and
the MQTT connector all use it. A row's Timestamp may be epoch seconds, milliseconds,
microseconds or nanoseconds (machines differ); it is normalised to milliseconds by its magnitude,
and a number that is none of these between the years 2000 and 2100 cannot be a time.

    >>> row = read_wide_row({"Thing": "R1", "Timestamp": 1554096380, "vaLoad_C11": 1.5})
    >>> (row.thing, row.time_ms, row.time_unit, row.values)
    ('R1', 1554096380000, 's', [('vaLoad_C11', 1.5)])
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

WIDE_ROW_NON_QUANTITIES = frozenset({"Thing", "Timestamp", "id"})


@dataclass
class RecordColumns:
    """Parsed machine records as columns, plus the inputs that could not be records."""

    things: list[str] = field(default_factory=list)
    quantities: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)

    def __len__(self) -> int:
        return len(self.times)

    def add(self, thing: str, quantity: str, time: float, value: float, line: int) -> None:
        self.things.append(thing)
        self.quantities.append(quantity)
        self.times.append(time)
        self.values.append(value)
        self.lines.append(line)


def _number(value: Any) -> float | None:
    """A JSON number as float; None for anything else (booleans included).

    An integer too large for a float is ±infinity, as `json.loads` reads 1e400.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_line(text: str | bytes, line: int, into: RecordColumns) -> None:
    """Parse one JSON line (narrow record or wide row) into `into`; bad input goes to malformed."""
    try:
        obj = json.loads(text)
    except ValueError as exc:
        into.malformed.append((line, f"bad JSON: {exc}"))
        return
    except RecursionError:  # json.loads recurses per level: thousands of nested arrays
        into.malformed.append((line, "bad JSON: nested too deeply"))
        return
    if not isinstance(obj, dict):
        into.malformed.append((line, "not a JSON object"))
    elif "quantity" in obj or "phenomenonTime" in obj:
        _parse_narrow(obj, line, into)
    elif "Thing" in obj or "Timestamp" in obj:
        _parse_wide(obj, line, into)
    else:
        into.malformed.append(
            (
                line,
                "neither a record {thing, quantity, phenomenonTime, result} "
                "nor a row {Thing, Timestamp, <quantity>: <value>, …}",
            )
        )


def _parse_narrow(obj: dict[str, Any], line: int, into: RecordColumns) -> None:
    record = narrow_record(obj)
    if isinstance(record, str):
        into.malformed.append((line, record))
    else:
        into.add(*record, line)


def narrow_record(obj: dict[str, Any]) -> tuple[str, str, float, float] | str:
    """`obj` as (thing, quantity, phenomenonTime, result), or the reason it is not a record."""
    for name in ("thing", "quantity", "phenomenonTime", "result"):
        if obj.get(name) is None:
            return f"missing {name}"
    thing, quantity = obj["thing"], obj["quantity"]
    if not isinstance(thing, str) or not thing or not isinstance(quantity, str) or not quantity:
        return "thing and quantity must be non-empty strings"
    time = _number(obj["phenomenonTime"])
    if time is None or not math.isfinite(time):
        return f"phenomenonTime is not a number: {obj['phenomenonTime']!r}"
    value = _number(obj["result"])
    if value is None:
        return f"result of {quantity} is not a number: {obj['result']!r}"
    return thing, quantity, time, value


def _parse_wide(obj: dict[str, Any], line: int, into: RecordColumns) -> None:
    try:
        row = read_wide_row(obj)
    except MalformedRow as exc:
        into.malformed.append((line, str(exc)))
        return
    into.malformed.extend((line, problem) for problem in row.problems)
    for quantity, value in row.values:
        into.add(row.thing, quantity, row.time_ms, value, line)


class MalformedRow(ValueError):
    """A wide row that cannot give any record; `kind` names the rule it broke, for counting."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class WideRow:
    """A wide row read: its thing, its time in whole epoch ms, its numeric values in key order.

    `problems` names the quantities left out because their value is not a finite number;
    `time_unit` says what the Timestamp was given in (`s`, `ms`, `us` or `ns`).
    """

    thing: str
    time_ms: int
    time_unit: str
    values: list[tuple[str, float]]
    problems: list[str]


# (unit, factor to ms, smallest and largest value that puts the time in 2000 … 2100)
_EPOCH_2000_MS, _EPOCH_2100_MS = 946_684_800_000, 4_102_444_800_000
_TIME_UNITS = tuple(
    (unit, factor, _EPOCH_2000_MS / factor, _EPOCH_2100_MS / factor)
    for unit, factor in (("ms", 1), ("s", 1000), ("us", 1e-3), ("ns", 1e-6))
)


def normalise_time_ms(value: Any) -> tuple[int, str]:
    """A Timestamp as whole epoch ms, with the unit it was read in; `MalformedRow` if no time.

    The unit is the one (s, ms, µs, ns) that puts the time between 2000 and 2100.
    """
    time = _number(value)
    if time is None:
        raise MalformedRow("bad_timestamp", f"Timestamp is not a number: {value!r}")
    for unit, factor, low, high in _TIME_UNITS:
        if low <= time < high:
            return round(time * factor), unit
    raise MalformedRow(
        "impossible_time",
        f"Timestamp {value!r} cannot be a time: not between 2000 and 2100 as epoch s, ms, µs or ns",
    )


def read_wide_row(obj: dict[str, Any]) -> WideRow:
    """Read a wide row; `MalformedRow` when it has no Thing or no usable Timestamp."""
    thing = obj.get("Thing")
    if not isinstance(thing, str) or not thing:
        raise MalformedRow("missing_thing", "missing Thing")
    if obj.get("Timestamp") is None:
        raise MalformedRow("missing_timestamp", "missing Timestamp")
    time_ms, unit = normalise_time_ms(obj["Timestamp"])
    values: list[tuple[str, float]] = []
    problems: list[str] = []
    isfinite, non_quantities = math.isfinite, WIDE_ROW_NON_QUANTITIES
    for quantity, raw in obj.items():  # type() checks: booleans are no numbers here
        if quantity in non_quantities:
            continue
        kind = type(raw)
        if kind is float and isfinite(raw):
            values.append((quantity, raw))
        elif kind is int:
            values.append((quantity, float(raw)))
        else:
            problems.append(f"value of {quantity} is not a number: {raw!r}")
    return WideRow(thing, time_ms, unit, values, problems)


def json_number(x: float) -> str:
    """A float as JSON: integral values without a fraction, non-finite ones as null.

    Others in the shortest text that reads back as the same float (orjson's, e.g. 0.00001).
    """
    import orjson  # here, not at the top: the library (`spark.narrow`) needs none of it

    if not math.isfinite(x):
        return "null"
    if x == int(x) and abs(x) < 2**53:
        return str(int(x))
    return orjson.dumps(x).decode()


def json_numbers(values: np.ndarray) -> list[str]:
    """`json_number` of every value, converted a column at a time (orjson's, not repr per value).

    >>> json_numbers(np.array([1554096380468.0, -4.44, float("nan"), -0.0, 1e-05]))
    ['1554096380468', '-4.44', 'null', '0', '0.00001']
    """
    import orjson  # as in `json_number`

    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    integral = finite & (np.abs(values) < 2**53)
    integral[integral] = values[integral] == np.trunc(values[integral])
    if len(values) and integral.all():  # times in epoch ms, the usual case: no gather
        return orjson.dumps(values.astype(np.int64).tolist()).decode()[1:-1].split(",")
    fractional = finite & ~integral
    texts = np.full(len(values), "null", dtype=object)
    for chosen, column in (
        (integral, values[integral].astype(np.int64).tolist()),
        (fractional, values[fractional].tolist()),
    ):
        if column:
            texts[chosen] = orjson.dumps(column).decode()[1:-1].split(",")
    return texts.tolist()
