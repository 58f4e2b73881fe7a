"""What the streaming tests share: random records, their split into micro-batches, the three kinds
of time column, and pairs compared as multisets."""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st

from statestream.testing.spark import OBSERVATIONS

BASE_MS = 1_700_000_000_000
_BASE_TIME = dt.datetime(2023, 11, 14, 22, 13, 20, 123, tzinfo=dt.UTC)  # µs in it on purpose

# (thing, quantity, time in quarter seconds: ties are common, value: duplicates are common), of
# both sides: a test runs few examples, and the simplest one draws none
records = st.lists(
    st.tuples(
        st.sampled_from(["m1", "m2"]),
        st.sampled_from(["L", "R", "X"]),
        st.integers(0, 48),
        st.integers(0, 3),
    ),
    min_size=4,
    max_size=30,
).filter(lambda drawn: {"L", "R"} <= {quantity for _, quantity, _, _ in drawn})
cuts = st.lists(st.integers(0, 30), max_size=3)

# two things, disorder within 2 s, ties, an irrelevant quantity, pairs pending at the end
DISORDERED = [
    ("m1", "L", 0, 1),
    ("m1", "L", 4, 2),
    ("m2", "R", 8, 1),
    ("m1", "R", 6, 3),
    ("m1", "R", 6, 1),
    ("m1", "L", 2, 0),
    ("m2", "L", 4, 2),
    ("m1", "X", 5, 1),
    ("m1", "L", 12, 3),
    ("m2", "R", 16, 2),
    ("m1", "R", 10, 2),
    ("m2", "L", 24, 0),
    ("m2", "R", 20, 1),
    ("m1", "L", 40, 1),
    ("m1", "R", 44, 2),
    ("m1", "R", 38, 0),
    ("m1", "L", 48, 3),
]


@dataclass(frozen=True)
class TimeColumn:
    """A kind of time column: its schema, a quarter second's count as its value, the options."""

    name: str
    schema: str
    time: Callable[[int], object]
    options: dict = field(default_factory=dict)

    def rows(self, drawn: list[tuple]) -> list[tuple]:
        """The drawn records as observation rows, the offset their position."""
        return [
            (thing, quantity, self.time(quarters), float(value), offset)
            for offset, (thing, quantity, quarters, value) in enumerate(drawn)
        ]


TIME_COLUMNS = [
    TimeColumn("epoch_ms", OBSERVATIONS, lambda q: BASE_MS + 250 * q),
    TimeColumn(
        "epoch_s",
        OBSERVATIONS.replace("phenomenonTime long", "phenomenonTime double"),
        lambda q: BASE_MS / 1000 + q / 4,
        {"time_unit": "s"},
    ),
    TimeColumn(
        "timestamp",
        OBSERVATIONS.replace("phenomenonTime long", "phenomenonTime timestamp"),
        lambda q: _BASE_TIME + dt.timedelta(milliseconds=250 * q),
    ),
]


def split(rows: list[tuple], cuts: list[int]) -> list[list[tuple]]:
    """`rows` cut into consecutive micro-batches at `cuts` (empty ones included)."""
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    return [rows[a:b] for a, b in itertools.pairwise(bounds)]


def as_counter(records: list[dict]) -> Counter:
    """Pair records as a multiset of plain tuples."""

    def side(record: dict) -> tuple:
        return (record["quantity"], record["phenomenonTime"], record["result"])

    return Counter(
        (
            p["thing"],
            p["quantity"],
            p["phenomenonTime"],
            p["result"],
            side(p["left"]),
            side(p["right"]),
        )
        for p in records
    )
