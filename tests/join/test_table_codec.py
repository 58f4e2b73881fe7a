"""Many things' state bytes read at once (`ThingsJoin.insert_states`): what `restore_state`
reads, and for bytes out of the layout, its error (the equality of the bytes themselves, and of
the joins restored from them, is `test_things`' property with `bulk`)."""

from __future__ import annotations

import numpy as np
import pytest

from statestream.join import ComplementJoin, JoinSpec, StateFormatError, export_state, restore_state
from statestream.join.engine import SeriesBatch
from statestream.join.things import ThingsJoin
from statestream.testing import blocks_of_five

SPEC = JoinSpec("L", "R", "out")


def _engine(records: int) -> ComplementJoin:
    engine = ComplementJoin(SPEC)
    for k, (side, t, v) in enumerate(blocks_of_five(records)):
        engine.process(**{side: SeriesBatch.of([t], [v], [k])})
    return engine


def test_states_read_at_once_are_the_engines_they_came_from() -> None:
    states = [export_state(_engine(n)) for n in (0, 7, 20, 3)]
    join = ThingsJoin(SPEC)
    join.insert_states([9, 2, 5, 4], states)
    assert join.export_states([9, 2, 5, 4]) == states
    assert [export_state(join.engine(c)) for c in (9, 2, 5, 4)] == states
    assert join.state_size == sum(restore_state(SPEC, s).state_size for s in states)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-8],  # truncated
        lambda data: data[:-3],  # not whole numbers
        lambda data: data + b"\0" * 8,  # trailing bytes
        lambda data: np.float64(2.0).tobytes() + data[8:],  # another format version
        lambda data: data[:16],  # inside a header
    ],
)
def test_bytes_out_of_the_layout_fail_as_restore_state_does(damage) -> None:
    good, bad = export_state(_engine(12)), damage(export_state(_engine(12)))
    with pytest.raises(StateFormatError) as expected:
        restore_state(SPEC, bad)
    with pytest.raises(StateFormatError, match=str(expected.value)):
        ThingsJoin(SPEC).insert_states([1, 2], [good, bad])
