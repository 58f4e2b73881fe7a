"""The rows a stateful processor call returns: its Kafka records, packed, and its figures.

A call returns one row per kind and topic, holding all its records of that kind, and a last row
of kind `figures` with the call's counts. Few, wide rows instead of one per record: every output
row costs the JVM a conversion from Arrow, the metrics aggregation and a conversion back to Arrow
for the writer, so packing shortens a large batch of the join. A row's `values` are the
records' values, JSON texts, one per line in UTF-8 (JSON text never holds a raw newline, so
nothing needs escaping); its `keys` are a JSON array of [key, how many records in a row have
it]. The tasks' writer (`jvm/exactly-once`, `TransactionalPartition.unpack`) unpacks
them in the JVM; `records` does the same in Python and is the format's reference. Both are held
to `tests/exactly_once/golden/packed_rows.bin`. Rows with an empty topic are not written.

    >>> rows = OutputRows()
    >>> rows.add_many("pair", "out", "R1.p", ['{"a": 1}', '{"a": 2}'])
    >>> rows.add("late", "late", None, '{"b": 3}')
    >>> frame = rows.frame({"records": 4}, "records long")
    >>> frame[["kind", "topic", "count", "keys", "records"]].values.tolist()
    [['pair', 'out', 2, '[["R1.p",2]]', <NA>], ['late', 'late', 1, '[[null,1]]', <NA>], \
['figures', '', 0, '[]', 4]]
    >>> list(records(frame["topic"][0], frame["keys"][0], frame["values"][0]))
    [('out', 'R1.p', b'{"a": 1}'), ('out', 'R1.p', b'{"a": 2}')]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pandas as pd

from statestream.codecs.bad_input import REJECT_COLUMNS, Stage, dead_letter, to_json
from statestream.codecs.kafka_rows import python_objects

PACKED_COLUMNS = "kind string, topic string, count long, keys string, values binary"


def output_schema(figures: str) -> str:
    """The output schema of a processor whose figures row has columns `figures` (DDL)."""
    return f"{PACKED_COLUMNS}, {figures}"


class OutputRows:
    """The records of one call, by kind and topic."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], _Group] = {}

    def add(self, kind: str, topic: str, key: str | None, value: str) -> None:
        self.add_many(kind, topic, key, [value])

    def add_many(self, kind: str, topic: str, key: str | None, values: list[str]) -> None:
        """Records of one kind, topic and key, one per value (a JSON text)."""
        if values:
            self.add_block(kind, topic, [(key, len(values))], "\n".join(values).encode())

    def add_runs(self, kind: str, topic: str, keys: np.ndarray, values: list[str]) -> None:
        """Records of one kind and topic, `keys[i]` the key of `values[i]` (an object array)."""
        if values:
            self.add_block(kind, topic, value_runs(keys), "\n".join(values).encode())

    def add_block(
        self, kind: str, topic: str, runs: Sequence[tuple[str | None, int]], block: bytes
    ) -> None:
        """Records of one kind and topic already packed: `block` holds their values, one a line
        (UTF-8, no newline after the last), `runs` their keys as (key, how many in a row)."""
        count = sum(n for _, n in runs)
        if count == 0:
            return
        group = self._groups.setdefault((kind, topic), _Group())
        for key, n in runs:
            _append_run(group.runs, key, n)
        group.blocks.append(block)
        group.count += count

    def add_dead_letters(
        self, stage: Stage, topic: str, source_topic: str, rejects: pd.DataFrame
    ) -> None:
        """A decoder's rejects (columns reason, raw, partition, offset) as dead letters.

        Kind `malformed`, no key, one record of `statestream.codecs.bad_input`'s shape per reject.
        """
        if rejects.empty:  # the usual case: not even itertuples' row type to make
            return
        columns = (python_objects(rejects[name]) for name in REJECT_COLUMNS)
        values = [
            to_json(
                dead_letter(
                    stage,
                    reason,
                    raw,
                    source_topic=source_topic,
                    partition=int(partition),
                    offset=int(offset),
                )
            )
            for reason, raw, partition, offset in zip(*columns, strict=True)
        ]
        self.add_many("malformed", topic, None, values)

    def count(self, kind: str) -> int:
        return sum(group.count for (k, _), group in self._groups.items() if k == kind)

    def frame(self, figures: dict[str, float], figure_columns: str) -> pd.DataFrame:
        """One row per kind and topic, then the `figures` row (`figure_columns`: their DDL).

        The frame is made at once from all its columns (adding the figures' columns one by one
        to a made frame is slower: a call of a small batch pays it each time).
        """
        columns: dict[str, Any] = {"kind": [], "topic": [], "count": [], "keys": [], "values": []}
        packed = [
            (kind, topic, group.count, _json_array(group.runs), b"\n".join(group.blocks))
            for (kind, topic), group in self._groups.items()
        ]
        for row in [*packed, ("figures", "", 0, "[]", b"")]:
            for name, item in zip(columns, row, strict=True):
                columns[name].append(item)
        empty = len(packed)
        for column in figure_columns.split(","):
            name, kind = column.split()
            if kind == "double":
                figure = figures.get(name, np.nan)
                columns[name] = np.array([np.nan] * empty + [figure], dtype=np.float64)
            else:
                columns[name] = pd.array([None] * empty + [figures.get(name)], dtype="Int64")
        return pd.DataFrame(columns)


@dataclass
class _Group:
    """The records of one kind and topic: their keys' runs and their values' blocks."""

    runs: list[list] = field(default_factory=list)
    blocks: list[bytes] = field(default_factory=list)
    count: int = 0


def value_runs(column: np.ndarray) -> list[tuple[Any, int]]:
    """(value, how many in a row) of each run of equal values of a column, in order: the keys'
    runs of a packed row (of key names, or of codes to name).

    >>> value_runs(np.array([3, 3, 1, 3]))
    [(3, 2), (1, 1), (3, 1)]
    """
    if len(column) == 0:
        return []
    starts = np.flatnonzero(np.concatenate(([True], column[1:] != column[:-1])))
    sizes = np.diff(np.append(starts, len(column)))
    return list(zip(column.take(starts).tolist(), sizes.tolist(), strict=True))


def records(topic: str, keys: str, values: bytes) -> Iterator[tuple[str, str | None, bytes]]:
    """The Kafka records (topic, key, value) of one packed row."""
    lines = iter(values.split(b"\n"))
    for key, count in orjson.loads(keys):
        for value in itertools.islice(lines, count):
            yield topic, key, value


def _append_run(runs: list[list], key: str | None, count: int) -> None:
    """Add `count` records of `key` to `runs`, extending the last run when it has that key."""
    if runs and runs[-1][0] == key:
        runs[-1][1] += count
    else:
        runs.append([key, count])


def _json_array(items: list) -> str:
    return orjson.dumps(items).decode()
