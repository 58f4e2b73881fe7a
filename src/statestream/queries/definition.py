"""`QueryDef`: a streaming query declared once — its name, settings section, topics, dead-letter
stage and the figures it observes for each batch — and read everywhere else: the `run`
commands and `run pipeline`, the printed batch lines, `statestream status`, the demo's counts and
the chaos run.

A declaration names its Spark wiring by import path (`"statestream.queries.join.job:start"`), so
reading it imports neither Spark nor the query's engine: Spark's Python workers import a query's
package when they unpickle its processor, and stay light.

    >>> pairs = Figure("pairs_out", "pairs", "count:pair", demo=True)
    >>> query = QueryDef(
    ...     name="join", command="join", use_case="machine", section="join",
    ...     input_topics=("machine_data",), output_topics=("machine_out", "late", "dead_letter"),
    ...     dead_letter_stage="join", metrics_name="join_metrics",
    ...     figures=(pairs, Figure("late", "late", "count:late")),
    ...     line="{pairs_out:,} pairs, late {late:,}", start="statestream.queries.join.job:start",
    ... )
    >>> query.counters
    ('pairs_out', 'late')
    >>> query.batch_text({"pairs_out": 1200, "late": 3})
    '1,200 pairs, late 3'
    >>> [figure.name for figure in query.demo_figures]
    ['pairs_out']
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from statestream.codecs.bad_input import Stage
from statestream.jobs.status import batch_figures, batch_line
from statestream.sinks.line_protocol import PointShape

UseCase = Literal["machine", "vehicle"]


@dataclass(frozen=True)
class Figure:
    """One figure a query observes for each batch.

    `source` says how the tasks' output rows give it: `sum:COLUMN` (the rows' figure column
    summed), `count:KIND` (the records of packed rows of that kind) or `max:COLUMN`.
    `demo`: shown in the demo's progress line, under `label`.
    """

    name: str
    label: str
    source: str
    demo: bool = False


@dataclass(frozen=True)
class QueryDef:
    """A streaming query of statestream, declared once (see the module documentation).

    `input_topics` and `output_topics` name fields of `settings.topics`; `line` is the printed
    batch line's middle part, a format string over the batch's figures (`batch_figures`, plus
    `state_kb`); `start` and `options` are `module:name` paths of its Spark wiring: a function
    `(spark, settings, options) -> StreamingQuery` and its `QueryOptions` class.
    """

    name: str  # the query's name: its checkpoint folder and its status files
    command: str  # `statestream run <command>`
    use_case: UseCase
    section: str  # its settings section
    input_topics: tuple[str, ...]
    output_topics: tuple[str, ...]
    dead_letter_stage: Stage  # the `stage` of the dead letters it writes
    metrics_name: str  # the name its observed metrics go under in a progress report
    figures: tuple[Figure, ...]
    line: str
    start: str
    options: str = ""
    help: str = ""  # `run <command>`'s help: what the query does (its topics are added)
    check: str = ""  # a `(settings, options) -> None` that refuses what it cannot run, early
    printer: str = ""  # a `BatchPrinter` class of its own (no arguments)
    influx: tuple[PointShape, ...] = ()  # its output topics' points, for the InfluxDB sink
    verify: str = ""  # a `(settings) -> QueryCheck`: its output against a reference (chaos)

    def new_printer(self) -> BatchPrinter:
        """What prints each batch of one run, and its summary at the end: `printer`, else
        `batch_line` and no summary."""
        return _load(self.printer)() if self.printer else _DeclaredLines(self)

    @property
    def counters(self) -> tuple[str, ...]:
        """The names of its figures (records in aside), as a progress report holds them."""
        return tuple(figure.name for figure in self.figures)

    @property
    def demo_figures(self) -> tuple[Figure, ...]:
        return tuple(figure for figure in self.figures if figure.demo)

    def batch_text(self, figures: Mapping[str, Any]) -> str:
        """The query's own part of a batch line."""
        return self.line.format(**figures)

    def batch_metrics(self, progress: dict) -> dict[str, Any]:
        """The figures of one batch, from its progress report (`jobs.status.batch_figures`)."""
        return batch_figures(progress, self.metrics_name, self.counters)

    def batch_line(self, progress: dict) -> str:
        """The line a run command prints for one batch."""
        figures = self.batch_metrics(progress)
        size = figures["state_bytes"]
        state_kb = "–" if size is None else f"{size / 1000:,.0f} kB"
        return batch_line(figures, self.batch_text({**figures, "state_kb": state_kb}))

    def starter(self) -> Callable[..., Any]:
        """Its start function (imports its Spark wiring)."""
        return _load(self.start)

    def options_type(self) -> type:
        """Its `QueryOptions` class (imports its Spark wiring)."""
        return _load(self.options)

    def checker(self) -> Callable[..., None]:
        """Its `check` function (imports its Spark wiring)."""
        return _load(self.check)

    def verifier(self) -> Callable[..., QueryCheck]:
        """Its `verify` function."""
        return _load(self.verify)


@dataclass(frozen=True)
class QueryCheck:
    """A query's results on its topic against a reference computed from its input, as a chaos
    run ends: results of the reference missing, there with other figures, written twice (the
    same record again: not exactly once), or not the reference's at all."""

    expected: int
    missing: int
    wrong: int
    duplicated: int
    unexpected: int

    @property
    def passed(self) -> bool:
        return not (self.missing or self.wrong or self.duplicated or self.unexpected)

    @classmethod
    def of(cls, want: Mapping[Any, Any], got: Mapping[Any, Any], written: list) -> QueryCheck:
        """`want` (the reference's latest result per key) against `got` (the topic's latest),
        `written` every record as it was written (a repeat is a duplicate); figures compare
        within 1e-9.

        >>> QueryCheck.of({"a": 1.0, "b": [2.0]}, {"a": 1.0, "b": [2.5], "c": 0}, ["x", "x"])
        QueryCheck(expected=2, missing=0, wrong=1, duplicated=1, unexpected=1)
        """
        wrong = [key for key in want.keys() & got.keys() if not _same(want[key], got[key])]
        return cls(
            expected=len(want),
            missing=len(want.keys() - got.keys()),
            wrong=len(wrong),
            duplicated=len(written) - len(set(written)),
            unexpected=len(got.keys() - want.keys()),
        )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


class BatchPrinter(Protocol):
    """Turns each batch's progress into its printed line; `summary` is printed when the run
    ends (nothing when empty)."""

    def line(self, progress: dict) -> str: ...

    def summary(self) -> str: ...


@dataclass(frozen=True)
class _DeclaredLines:
    query: QueryDef

    def line(self, progress: dict) -> str:
        return self.query.batch_line(progress)

    def summary(self) -> str:
        return ""


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
