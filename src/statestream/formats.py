"""The JSON shapes of statestream's records.

In: a *narrow* machine record `{"thing", "quantity", "phenomenonTime", "result"}` (the seed's
Kafka record) or a *wide* row `{"Thing", "Timestamp", <quantity>: <value>, …}` (the seed's sample
file), which stands for one narrow record per quantity, in the row's key order.
Out: a joined pair in the spec's output format.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statestream.join import JoinedPairs, JoinSpec

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
    """A JSON number as float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def parse_line(text: str | bytes, line: int, into: RecordColumns) -> None:
    """Parse one JSON line (narrow record or wide row) into `into`; bad input goes to malformed."""
    try:
        obj = json.loads(text)
    except ValueError as exc:
        into.malformed.append((line, f"bad JSON: {exc}"))
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
    for name in ("thing", "quantity", "phenomenonTime", "result"):
        if obj.get(name) is None:
            into.malformed.append((line, f"missing {name}"))
            return
    thing, quantity = obj["thing"], obj["quantity"]
    if not isinstance(thing, str) or not thing or not isinstance(quantity, str) or not quantity:
        into.malformed.append((line, "thing and quantity must be non-empty strings"))
        return
    time = _number(obj["phenomenonTime"])
    if time is None or not math.isfinite(time):
        into.malformed.append((line, f"phenomenonTime is not a number: {obj['phenomenonTime']!r}"))
        return
    value = _number(obj["result"])
    if value is None:
        into.malformed.append((line, f"result of {quantity} is not a number: {obj['result']!r}"))
        return
    into.add(thing, quantity, time, value, line)


def _parse_wide(obj: dict[str, Any], line: int, into: RecordColumns) -> None:
    thing = obj.get("Thing")
    if not isinstance(thing, str) or not thing:
        into.malformed.append((line, "missing Thing"))
        return
    time = _number(obj.get("Timestamp"))
    if time is None or not math.isfinite(time):
        into.malformed.append((line, f"Timestamp is not a number: {obj.get('Timestamp')!r}"))
        return
    for quantity, raw in obj.items():
        if quantity in WIDE_ROW_NON_QUANTITIES:
            continue
        value = _number(raw)
        if value is None:
            into.malformed.append((line, f"value of {quantity} is not a number: {raw!r}"))
            continue
        into.add(thing, quantity, time, value, line)


def json_number(x: float) -> str:
    """A float as JSON: integral values without a fraction, non-finite ones as null."""
    if not math.isfinite(x):
        return "null"
    if x == int(x) and abs(x) < 2**53:
        return str(int(x))
    return repr(x)


def pair_json_lines(thing: str, spec: JoinSpec, pairs: JoinedPairs) -> list[str]:
    """The pairs one engine step emitted, in the spec's output format, one JSON text each."""
    result_quantity, left_quantity, right_quantity = spec.result, spec.left, spec.right
    columns = (pairs.left_t, pairs.left_v, pairs.right_t, pairs.right_v, pairs.result)
    head = f'{{"thing": {json.dumps(thing)}, "quantity": {json.dumps(result_quantity)}, '
    left_q = f'"left": {{"quantity": {json.dumps(left_quantity)}, "phenomenonTime": '
    right_q = f'"right": {{"quantity": {json.dumps(right_quantity)}, "phenomenonTime": '
    num = json_number
    return [
        f'{head}"phenomenonTime": {num((lt + rt) / 2)}, "result": {num(res)}, '
        f'{left_q}{num(lt)}, "result": {num(lv)}}}, {right_q}{num(rt)}, "result": {num(rv)}}}}}'
        for lt, lv, rt, rv, res in zip(*(c.tolist() for c in columns), strict=True)
    ]
