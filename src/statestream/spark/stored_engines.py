"""The engines of a stateful call's things, kept in a transformWithState MapState by thing.

One value per thing holds its engine states (one per join spec, by result name), packed: each
state store call is a request to the JVM, so one per thing and not one per join (a call's reads
and writes are each sent in windows, `spark.patches.map_state_calls`). The pipeline's processor
(`queries.join.processor`) and the streaming `complement_join`
(`statestream.spark.stream_join`) both keep their state this way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from statestream.join import (
    JoinSpec,
    pack_states,
    unpack_states,
)
from statestream.spark.patches.map_state_calls import MapStateCalls

if TYPE_CHECKING:
    from statestream.join.router import JoinRouter

# the state store the engines live in (`jobs.session` sets it; `complement_join` requires it)
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# name, key and value schemas: the DDL "thing string" and "engines binary" as types, for a DDL
# string costs a round trip to the JVM's SQL parser in every task, twice (getMapState, MapState)
MAP_STATE = (
    "things",
    StructType([StructField("thing", StringType())]),
    StructType([StructField("engines", BinaryType())]),
)


class StoredEngines:
    """The engines of the things one call touches, read and written once per thing.

    With PySpark's own MapState, `prefetch` reads a call's things and `save` writes them with
    their requests sent in windows (`spark.patches.map_state_calls`): the same calls, without
    waiting for each answer before the next request.
    """

    def __init__(self, things: Any) -> None:  # a MapState: thing → packed engine states
        self.things = things
        self.calls = MapStateCalls.of(things)
        self.loaded: dict[str, dict[str, bytes]] = {}

    def prefetch(self, things: Iterable[str]) -> None:
        """Read the stored engines of `things` now (those not read yet), in one go."""
        if self.calls is None:
            return
        keys = [thing for thing in dict.fromkeys(things) if thing not in self.loaded]
        for thing, value in zip(keys, self.calls.get_values([(t,) for t in keys]), strict=True):
            self.loaded[thing] = _unpacked(value)

    def states_loader(
        self, specs: Sequence[JoinSpec]
    ) -> Callable[[list[str], int], list[bytes | None]]:
        """`JoinRouter`'s `load_states` for `specs`: (things, spec index) → their stored states."""

        def load(things: list[str], index: int) -> list[bytes | None]:
            self.prefetch(things)
            result = specs[index].result
            return [self._stored(thing).get(result) for thing in things]

        return load

    def _stored(self, thing: str) -> dict[str, bytes]:
        if thing not in self.loaded:
            self.loaded[thing] = _unpacked(self.things.getValue((thing,)))
        return self.loaded[thing]

    def save_states(self, exported: dict[tuple[str, str], bytes]) -> None:
        """Write back each thing's engine states (`export_state` bytes), by (thing, result);
        its other joins' as they were."""
        states: dict[str, dict[str, bytes]] = {}
        for (thing, result), data in exported.items():
            packed = states.setdefault(thing, dict(self.loaded.get(thing, {})))
            packed[result] = data
        items = (((thing,), (pack_states(packed),)) for thing, packed in states.items())
        if self.calls is not None:
            self.calls.update_values(items)
            return
        for key, value in items:
            self.things.updateValue(key, value)

    def save_router(self, router: JoinRouter, specs: Sequence[JoinSpec]) -> None:
        """Write back the states of a `JoinRouter` of `specs` (`exported_states`)."""
        exported = router.exported_states()
        self.save_states({(thing, specs[i].result): s for (thing, i), s in exported.items()})


def _unpacked(value: tuple | None) -> dict[str, bytes]:
    """A stored value (`getValue`'s row, or None) as its engine states by result name."""
    return unpack_states(bytes(value[0])) if value is not None else {}
