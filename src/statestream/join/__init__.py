"""The complement-join engine: pure numpy, no Spark, Kafka or JSON.

See ../shared/spec/complement-join.md (the contract) and `ComplementJoin` (one thing);
`ThingsJoin` joins many things at once, and `JoinRouter` many things and specs by name.
The as-of join (`pandas.merge_asof`'s semantics) shares the vocabulary: `asof_indices` matches
in batch, `AsofStream` incrementally, with watermarks and late rows as the complement join's.

The names below are imported on first use: `from statestream.join.spec import JoinSpec` (or
unpickling a spec) loads the spec alone, not the compiled engine. Spark's driver starts a Python
process at each query's start to unpickle the join's processor, and the engine's imports (numba
and its compiled loops) would lengthen that start.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES_OF = {  # module → the names it gives this package
    "asof": ("AsofRule", "asof_indices"),
    "asof_stream": ("AsofStream",),
    "codec": ("StateFormatError", "export_state", "pack_states", "restore_state", "unpack_states"),
    "engine": (
        "ComplementJoin",
        "EngineFinished",
        "JoinedPairs",
        "JoinStep",
        "SeriesBatch",
        "SeriesVerdicts",
    ),
    "names": ("CodedNames",),
    "router": ("JoinRouter", "RoutedStep", "RoutedSteps"),
    "series": ("ACCEPTED", "DUPLICATE", "LATE", "MALFORMED", "SeriesState"),
    "spec": ("BUILTIN_FUNCTIONS", "JoinSpec", "SpecTemplate"),
    "things": ("ThingsJoin", "ThingsStep"),
}
_MODULE_OF = {name: module for module, names in _NAMES_OF.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """`name` from the module that defines it, imported now (then kept as this module's)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
