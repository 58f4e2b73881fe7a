"""One call of the streaming complement join's processor (`_stream_processor.StreamBucketJoin`):
a bucket's micro-batch of rows → its pairs, the things' engines kept in the MapState
(`stored_engines`). The processor imports this module on its first call (start time).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from statestream.join import JoinSpec, SpecTemplate
from statestream.spark._bucket_join import PAIR, BucketJoin, new_router
from statestream.spark.stored_engines import StoredEngines

NAME_COLUMNS = {"left": "left_q", "right": "right_q", "result": "result_q"}


def joined_bucket(
    rows: Iterable[pd.DataFrame],
    things_state,
    specs: Sequence[JoinSpec | SpecTemplate],
    join_settings: dict[str, Any],
) -> pd.DataFrame:
    """One call of `StreamBucketJoin`: the output rows of a bucket's micro-batch `rows`, its
    things' engines kept in `things_state` (the processor's MapState).

    Templates are expanded with the call's quantities (a thing's engine of a spec is stored by
    the spec's result name); pair rows carry their spec's quantities in `NAME_COLUMNS`.
    """
    frame = pd.concat(list(rows), ignore_index=True)
    frame = BucketJoin([], **join_settings).in_arrival_order(frame)
    concrete = specs_for(specs, frame["quantity"].unique().tolist())
    join = BucketJoin(concrete, **join_settings)
    stored = StoredEngines(things_state)
    if concrete:
        stored.prefetch(frame["thing"].unique().tolist())
    router = new_router(concrete, load_states=stored.states_loader(concrete))
    step = join.process(router, frame)
    stored.save_router(router, concrete)
    return with_spec_names(join.output([step], frame), concrete)


def specs_for(specs: Sequence[JoinSpec | SpecTemplate], quantities: list[str]) -> list[JoinSpec]:
    """The concrete specs: the `JoinSpec`s, and the templates expanded with `quantities`."""
    concrete: list[JoinSpec] = []
    for spec in specs:
        concrete += [spec] if isinstance(spec, JoinSpec) else spec.specs_for(quantities)
    return list(dict.fromkeys(concrete))


def with_spec_names(out: pd.DataFrame, specs: list[JoinSpec]) -> pd.DataFrame:
    """`out` with the quantities of each pair's spec in `NAME_COLUMNS` (null on other rows)."""
    is_pair = (out["kind"] == PAIR).to_numpy() if "kind" in out else np.ones(len(out), bool)
    index = pd.to_numeric(out["spec"]).fillna(0).to_numpy(dtype=np.int64)
    for role, column in NAME_COLUMNS.items():
        names = np.array([getattr(spec, role) for spec in specs] + [None], dtype=object)
        out[column] = np.where(is_pair, names[index], None)
    return out
