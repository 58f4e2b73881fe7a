"""The offline join: JSON lines in, joined pairs out, with the engine of `statestream.join`.

File order is arrival order. The input is read in chunks, so memory stays flat however large the
file is; pairs are written in emission order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from statestream.codecs.bad_input import late_record, to_json
from statestream.codecs.formats import RecordColumns, parse_line
from statestream.codecs.pair_json import pair_json_lines
from statestream.join import DUPLICATE, LATE, MALFORMED, JoinRouter, JoinSpec, RoutedStep

CHUNK_LINES = 50_000


@dataclass
class JoinSummary:
    """What an offline join read, wrote and rejected."""

    lines: int = 0
    records: int = 0
    pairs: int = 0
    late: int = 0
    duplicates: int = 0
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    peak_state: int = 0
    seconds: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


class _Run:
    """One offline join: the router, the sinks and the counts."""

    def __init__(
        self,
        specs: Sequence[JoinSpec],
        out: IO[str],
        late_out: Callable[[], IO[str]],
        source: str,
    ) -> None:
        self.router = JoinRouter(specs)
        self.source = source
        self.out = out
        self.late_out = late_out
        self.summary = JoinSummary()

    def add_chunk(self, columns: RecordColumns) -> None:
        self.summary.records += len(columns)
        self.summary.malformed += columns.malformed
        if not len(columns):
            return
        lines = np.asarray(columns.lines, dtype=np.int64)
        steps = self.router.process(
            np.asarray(columns.things, dtype=object),
            np.asarray(columns.quantities, dtype=object),
            np.asarray(columns.times, dtype=np.float64),
            np.asarray(columns.values, dtype=np.float64),
            lines,
        )
        self._write(steps, columns, lines)

    def finish(self) -> None:
        self._write(self.router.finish(), RecordColumns(), np.empty(0, np.int64))

    def _write(self, steps: list[RoutedStep], columns: RecordColumns, lines: np.ndarray) -> None:
        for routed in steps:
            pairs = routed.step.pairs
            if len(pairs):
                texts = pair_json_lines(routed.thing, routed.spec, pairs)
                self.out.write("\n".join(texts) + "\n")
                self.summary.pairs += len(pairs)
            self._reject(routed, "left", routed.left_rows, routed.step.left, columns, lines)
            self._reject(routed, "right", routed.right_rows, routed.step.right, columns, lines)
        self.summary.peak_state = max(self.summary.peak_state, self.router.state_size)

    def _reject(self, routed, series, rows, verdicts, columns, lines) -> None:
        if not len(rows):
            return
        codes = verdicts.codes
        self.summary.duplicates += int(np.count_nonzero(codes == DUPLICATE))
        spec = routed.spec
        for k in np.flatnonzero(codes == MALFORMED):
            row = rows[k]
            quantity = columns.quantities[row]
            reason = f"value of {quantity} cannot be taken by {spec.function_name}"
            self.summary.malformed.append((int(lines[row]), reason))
        late = np.flatnonzero(codes == LATE)
        if len(late):
            self.summary.late += len(late)
            sink = self.late_out()
            for k in late:
                row = rows[k]
                watermark = verdicts.watermark[k]
                sink.write(
                    _late_json(self.source, routed.thing, series, spec, columns, row, watermark)
                )


def _late_json(source, thing, series, spec, columns, row, watermark) -> str:
    """The late record (`statestream.codecs.bad_input`) of input line `columns.lines[row]`."""
    record = late_record(
        "join",
        thing=thing,
        quantity=columns.quantities[row],
        phenomenon_time=columns.times[row],
        result=columns.values[row],
        watermark=float(watermark),
        source_topic=source,
        series=series,
        join=spec.result,
        line=columns.lines[row],
    )
    return to_json(record) + "\n"


def join_lines(
    source: Iterable[bytes],
    specs: Sequence[JoinSpec],
    out: IO[str],
    late_out: Callable[[], IO[str]],
    flush: bool = True,
    on_progress: Callable[[int], None] | None = None,
    source_name: str = "-",
) -> JoinSummary:
    """Join JSON lines from `source` and write pairs to `out`, late records to `late_out()`.

    `late_out` is called only when a first late record needs it. `on_progress` receives the
    bytes read so far after each chunk. `source_name` (the input file's) is the late records'
    `source_topic`; each also has its `line`.
    """
    started = time.perf_counter()
    run = _Run(specs, out, late_out, source_name)
    columns, line, bytes_read = RecordColumns(), 0, 0
    for raw in source:
        line += 1
        bytes_read += len(raw)
        if raw.strip():
            parse_line(raw, line, columns)
        if line % CHUNK_LINES == 0:
            run.add_chunk(columns)
            columns = RecordColumns()
            if on_progress:
                on_progress(bytes_read)
    run.add_chunk(columns)
    if flush:
        run.finish()
    if on_progress:
        on_progress(bytes_read)
    run.summary.lines = line
    run.summary.seconds = time.perf_counter() - started
    return run.summary
