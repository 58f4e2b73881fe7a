"""The rows a stateful processor call returns: its Kafka records, packed, and its figures.

A call returns one row per kind and topic, holding all its records of that kind as two JSON
arrays (`keys`, `values`), and a last row of kind `figures` with the call's counts. Few, wide rows
instead of one per record: every output row costs the JVM a conversion from Arrow, the metrics
aggregation and a conversion back to Arrow for the writer, and packing took about a tenth off a
500 k-record batch of the join. The writer (`jobs.kafka_output`) unpacks them with `records`.

    >>> rows = OutputRows()
    >>> rows.add_many("pair", "out", "R1.p", ['{"a": 1}', '{"a": 2}'])
    >>> rows.add("late", "late", None, '{"b": 3}')
    >>> frame = rows.frame({"records": 4}, "records long")
    >>> frame[["kind", "topic", "count", "records"]].values.tolist()
    [['pair', 'out', 2, <NA>], ['late', 'late', 1, <NA>], ['figures', '', 0, 4]]
    >>> list(records(frame["topic"][0], frame["keys"][0], frame["values"][0]))
    [('out', 'R1.p', '{"a": 1}'), ('out', 'R1.p', '{"a": 2}')]
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pandas as pd

PACKED_COLUMNS = "kind string, topic string, count long, keys string, values string"


def output_schema(figures: str) -> str:
    """The output schema of a processor whose figures row has columns `figures` (DDL)."""
    return f"{PACKED_COLUMNS}, {figures}"


class OutputRows:
    """The records of one call, by kind and topic."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], tuple[list[str | None], list[str]]] = {}

    def add(self, kind: str, topic: str, key: str | None, value: str) -> None:
        self.add_many(kind, topic, key, [value])

    def add_many(self, kind: str, topic: str, key: str | None, values: list[str]) -> None:
        """Records of one kind, topic and key, one per value."""
        keys, group_values = self._groups.setdefault((kind, topic), ([], []))
        keys.extend([key] * len(values))
        group_values.extend(values)

    def count(self, kind: str) -> int:
        return sum(len(values) for (k, _), (_, values) in self._groups.items() if k == kind)

    def frame(self, figures: dict[str, float], figure_columns: str) -> pd.DataFrame:
        """One row per kind and topic, then the `figures` row (`figure_columns`: their DDL)."""
        rows: dict[str, list] = {"kind": [], "topic": [], "count": [], "keys": [], "values": []}
        packed = [
            (kind, topic, len(values), _json_array(keys), _json_array(values))
            for (kind, topic), (keys, values) in self._groups.items()
        ]
        for row in [*packed, ("figures", "", 0, "[]", "[]")]:
            for name, item in zip(rows, row, strict=True):
                rows[name].append(item)
        frame = pd.DataFrame(rows)
        empty = len(frame) - 1
        for column in figure_columns.split(","):
            name, kind = column.split()
            if kind == "double":
                frame[name] = [float("nan")] * empty + [figures.get(name, float("nan"))]
            else:
                frame[name] = pd.array([None] * empty + [figures.get(name)], dtype="Int64")
        return frame


def records(topic: str, keys: str, values: str) -> Iterator[tuple[str, str | None, str]]:
    """The Kafka records (topic, key, value) of one packed row."""
    for key, value in zip(orjson.loads(keys), orjson.loads(values), strict=True):
        yield topic, key, value


def _json_array(items: list) -> str:
    return orjson.dumps(items).decode()
