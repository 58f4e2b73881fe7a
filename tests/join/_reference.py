"""The router as it was before `ThingsJoin`: one `ComplementJoin` per (thing, spec), called one
by one. The reference that tests/join/test_things.py holds the many-things join to."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from statestream.join import ComplementJoin, JoinSpec, RoutedStep, SeriesBatch


class PerThingRouter:
    def __init__(
        self,
        specs: Sequence[JoinSpec],
        load_engine: Callable[[str, int], ComplementJoin | None] | None = None,
    ) -> None:
        self.specs = list(specs)
        self.engines: dict[tuple[str, int], ComplementJoin] = {}
        self._load_engine = load_engine

    def engine(self, thing: str, spec_index: int) -> ComplementJoin:
        key = (thing, spec_index)
        engine = self.engines.get(key)
        if engine is None:
            loaded = self._load_engine(thing, spec_index) if self._load_engine else None
            engine = loaded if loaded is not None else ComplementJoin(self.specs[spec_index])
            self.engines[key] = engine
        return engine

    @property
    def state_size(self) -> int:
        return sum(engine.state_size for engine in self.engines.values())

    def process(self, things, quantities, t, v, pos=None) -> list[RoutedStep]:
        pos = np.arange(len(t), dtype=np.int64) if pos is None else pos
        steps = []
        for spec_index, spec in enumerate(self.specs):
            is_left = quantities == spec.left
            is_right = quantities == spec.right
            for thing, rows in _rows_by_thing(things, is_left | is_right):
                left_rows = rows[is_left[rows]]
                right_rows = rows[is_right[rows]]
                step = self.engine(thing, spec_index).process(
                    SeriesBatch(t[left_rows], v[left_rows], pos[left_rows]),
                    SeriesBatch(t[right_rows], v[right_rows], pos[right_rows]),
                )
                steps.append(RoutedStep(thing, spec, step, left_rows, right_rows))
        return steps

    def finish(self) -> list[RoutedStep]:
        empty = np.empty(0, dtype=np.int64)
        return [
            RoutedStep(thing, self.specs[index], engine.finish(), empty, empty)
            for (thing, index), engine in self.engines.items()
        ]


def _rows_by_thing(things: np.ndarray, selected: np.ndarray) -> Iterator[tuple[str, np.ndarray]]:
    rows = np.flatnonzero(selected)
    if len(rows) == 0:
        return
    codes: dict[str, int] = {}
    inverse = np.fromiter(
        (codes.setdefault(thing, len(codes)) for thing in things[rows].tolist()),
        dtype=np.int64,
        count=len(rows),
    )
    if len(codes) == 1:
        yield next(iter(codes)), rows
        return
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(codes) + 1))
    for code, thing in enumerate(codes):
        yield thing, rows[order[bounds[code] : bounds[code + 1]]]
