"""The quantity statistics' results against the plain reference, as a chaos run ends
(`QueryDef.verify`): the reference (`reference`) run over machine.data's records of each series
in partition order, which is the order the query read them in. A series is kept as two arrays of
doubles (times, values): an hour at thousands of records a second is tens of millions."""

from __future__ import annotations

import json
import math
from array import array
from collections import defaultdict

import orjson

from statestream.config import Settings
from statestream.exactly_once.read import iter_records, read_records
from statestream.queries.definition import QueryCheck
from statestream.queries.quantity_stats.job import quantity_spec
from statestream.queries.quantity_stats.reference import reference_quantity_stats

WindowKey = tuple[str, str, int]  # thing, quantity, window_start
Figures = tuple[int, float, float, float, float]  # count, min, max, mean, last


def verify(settings: Settings) -> QueryCheck:
    """Each window's latest result on its topic against the reference's latest emission."""
    series: defaultdict[tuple[str, str], tuple[array[float], array[float]]] = defaultdict(
        lambda: (array("d"), array("d"))
    )
    for (_, _, value), _ in iter_records(settings, settings.topics.machine_data):
        if (decoded := _record(value)) is not None:
            thing, quantity, t, v = decoded
            times, values = series[thing, quantity]
            times.append(t)
            values.append(v)
    spec = quantity_spec(settings)
    want: dict[WindowKey, Figures] = {}
    for (thing, quantity), (times, values) in series.items():
        for window in reference_quantity_stats(times, values, spec).emitted:
            figures = (window.count, window.min, window.max, window.mean, window.last)
            want[thing, quantity, window.start] = figures
    written = [v for _, _, v in read_records(settings, settings.topics.machine_quantities)]
    got: dict[WindowKey, Figures] = {}
    for value in written:
        r = json.loads(value)
        got[r["thing"], r["quantity"], r["window_start"]] = (
            r["count"],
            r["min"],
            r["max"],
            r["mean"],
            r["last"],
        )
    return QueryCheck.of(want, got, written)


def _record(value: bytes) -> tuple[str, str, float, float] | None:
    """A JSON machine record's (thing, quantity, time, finite result); None for what the query
    dead-letters (a plain check of the shape, not the query's decoder)."""
    try:
        r = orjson.loads(value)
        t, v = float(r["phenomenonTime"]), float(r["result"])
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(r["thing"], str) and isinstance(r["quantity"], str)) or not math.isfinite(v):
        return None
    return r["thing"], r["quantity"], t, v
