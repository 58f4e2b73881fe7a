"""Many things and many join specs at once: routes columns of records to one engine each.

>>> import numpy as np
>>> router = JoinRouter([JoinSpec("speed", "torque", "power", function="product")])
>>> steps = router.process(
...     things=np.array(["m1", "m2", "m1", "m2"], dtype=object),
...     quantities=np.array(["speed", "speed", "torque", "torque"], dtype=object),
...     t=np.array([0.0, 0.0, 1000.0, 1000.0]),
...     v=np.array([2.0, 3.0, 10.0, 10.0]),
... )
>>> sorted((s.thing, s.step.pairs.result.tolist()) for s in steps)
[('m1', [20.0]), ('m2', [30.0])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from statestream.join.engine import ComplementJoin, JoinStep, SeriesBatch
from statestream.join.spec import JoinSpec

EngineKey = tuple[str, int]  # (thing, index of the spec)


@dataclass(frozen=True)
class RoutedStep:
    """One engine's step, with the input rows its left and right verdicts refer to."""

    thing: str
    spec: JoinSpec
    step: JoinStep
    left_rows: np.ndarray
    right_rows: np.ndarray


class JoinRouter:
    """One `ComplementJoin` per (thing, spec), created on first use or loaded by `load_engine`.

    A record whose quantity is in no spec takes part in no join; a quantity in several specs
    feeds each of them.
    """

    def __init__(
        self,
        specs: Sequence[JoinSpec],
        load_engine: Callable[[str, int], ComplementJoin | None] | None = None,
    ) -> None:
        self.specs = list(specs)
        self.engines: dict[EngineKey, ComplementJoin] = {}
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

    def process(
        self,
        things: np.ndarray,
        quantities: np.ndarray,
        t: np.ndarray,
        v: np.ndarray,
        pos: np.ndarray | None = None,
    ) -> list[RoutedStep]:
        """Join a batch of records given as columns, in arrival order."""
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
        """Declare every engine's input finished and return the remaining pairs."""
        empty = np.empty(0, dtype=np.int64)
        return [
            RoutedStep(thing, self.specs[index], engine.finish(), empty, empty)
            for (thing, index), engine in self.engines.items()
        ]


def _rows_by_thing(things: np.ndarray, selected: np.ndarray) -> Iterator[tuple[str, np.ndarray]]:
    """(thing, its selected row indices in arrival order) in order of first appearance."""
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
