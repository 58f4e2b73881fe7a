"""Machine rows and the observations they hold: one wide row in, one record per quantity out.

A machine row is one message of a machine: `{"Thing": "R0815", "Timestamp": <epoch ms>,
"vaTorque_C11": -4.44, …, "id": …}`. Each quantity in it becomes an `Observation`, the record
statestream puts on Kafka: key `thing.quantity`, value
`{"thing", "quantity", "phenomenonTime", "result"}`.

    >>> row = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.6, "id": "c352"}
    >>> [(o.key, o.result) for o in observations_from_row(row)]
    [('R0815.vaLoad_C11', 1.6)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from statestream.errors import InputError
from statestream.formats import WIDE_ROW_NON_QUANTITIES as NON_QUANTITY_FIELDS

SAMPLE_FILE = Path(str(resources.files("statestream") / "data" / "machine_events.jsonl"))
"""The bundled sample: 5,000 rows of three CNC machines (Apache License 2.0)."""


@dataclass(frozen=True)
class Observation:
    """One value of one quantity of one thing at one time."""

    thing: str
    quantity: str
    phenomenon_time_ms: int
    result: float

    @property
    def key(self) -> str:
        """The Kafka key: `thing.quantity`, so one series stays in one partition, in order."""
        return f"{self.thing}.{self.quantity}"

    def to_json(self) -> str:
        """The Kafka value."""
        return json.dumps(
            {
                "thing": self.thing,
                "quantity": self.quantity,
                "phenomenonTime": self.phenomenon_time_ms,
                "result": self.result,
            }
        )


def observations_from_row(row: dict[str, Any]) -> list[Observation]:
    """The observations of one machine row; `InputError` when the row lacks Thing or Timestamp
    or holds a value that is not a number."""
    thing, timestamp = row.get("Thing"), row.get("Timestamp")
    if not isinstance(thing, str) or not thing:
        raise InputError(f"row without a Thing: {_shorten(row)}")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise InputError(f"row without an integer Timestamp (epoch ms): {_shorten(row)}")
    observations = []
    for quantity, value in row.items():
        if quantity in NON_QUANTITY_FIELDS:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputError(f"{quantity} of {thing} at {timestamp} is not a number: {value!r}")
        observations.append(Observation(thing, quantity, timestamp, float(value)))
    return observations


def read_machine_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a JSON-lines file; `InputError` naming the file and line when one is bad."""
    try:
        with open(path, encoding="utf-8") as handle:
            yield from _parse_lines(path, handle)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def _parse_lines(path: Path, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}, line {number}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {number}: not a JSON object")
        yield row


def read_observations(path: Path) -> Iterator[Observation]:
    """Every observation of a JSON-lines file of machine rows, in file order."""
    for row in read_machine_rows(path):
        yield from observations_from_row(row)


def _shorten(row: dict[str, Any]) -> str:
    text = json.dumps(row)
    return text if len(text) <= 120 else text[:117] + "..."
