"""The complement-join engine: pure numpy, no Spark, Kafka or JSON.

See ../shared/spec/complement-join.md (the contract) and `ComplementJoin` (one thing);
`ThingsJoin` joins many things at once, and `JoinRouter` many things and specs by name.
"""

from statestream.join.codec import (
    StateFormatError,
    export_state,
    pack_states,
    restore_state,
    unpack_states,
)
from statestream.join.engine import (
    ComplementJoin,
    EngineFinished,
    JoinedPairs,
    JoinStep,
    SeriesBatch,
    SeriesVerdicts,
)
from statestream.join.names import CodedNames
from statestream.join.router import JoinRouter, RoutedStep, RoutedSteps
from statestream.join.series import ACCEPTED, DUPLICATE, LATE, MALFORMED, SeriesState
from statestream.join.spec import BUILTIN_FUNCTIONS, JoinSpec, SpecTemplate
from statestream.join.things import ThingsJoin, ThingsStep

__all__ = [
    "ACCEPTED",
    "BUILTIN_FUNCTIONS",
    "DUPLICATE",
    "LATE",
    "MALFORMED",
    "CodedNames",
    "ComplementJoin",
    "EngineFinished",
    "JoinRouter",
    "JoinSpec",
    "JoinStep",
    "JoinedPairs",
    "RoutedStep",
    "RoutedSteps",
    "SeriesBatch",
    "SeriesState",
    "SeriesVerdicts",
    "SpecTemplate",
    "StateFormatError",
    "ThingsJoin",
    "ThingsStep",
    "export_state",
    "pack_states",
    "restore_state",
    "unpack_states",
]
