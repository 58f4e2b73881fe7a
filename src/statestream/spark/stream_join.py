"""The complement join of a streaming DataFrame: the pipeline's stateful join, the caller's columns.

Things are bucketed as in batch (`_batch_input.bucketed`); each bucket's micro-batch goes through
a `transformWithStateInPandas` processor that keeps every thing's engines in a MapState
(`jobs.stored_engines`, as `statestream run join` does) and joins the batch's records, in arrival
order, with a `JoinRouter` (`_bucket_join.BucketJoin`). The pairs come out as soon as they are
certain: over any split of the input into micro-batches they are the batch join's pairs without
flush. A stream never ends, so there is no flush: the pairs still pending are released by later
records, also after a restart from the query's checkpoint. A bounded stream's final flush, once
its query has stopped, reads them from the checkpoint (`stream_flush.flush_stream`).

The number of buckets is part of the state's layout: keep it (and the specs) fixed for a
checkpoint. A pair's record may come from an earlier micro-batch, so its times are the engine's
(epoch ms) converted back: exact for epoch ms and timestamps, to the last bit of a double for
epoch seconds (`time_unit="s"`) only in most cases.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import ConfigError
from statestream.jobs.session import ROCKSDB_PROVIDER
from statestream.jobs.stored_engines import StoredEngines
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark._batch_input import InputColumns, TimeKind, bucketed, rejection_reason
from statestream.spark._bucket_join import PAIR, BucketJoin, new_router
from statestream.spark._pair_rows import output_schema, pairs, rejected_rows
from statestream.spark._stream_processor import StreamBucketJoin

_STATE_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
NAME_COLUMNS = {"left": "left_q", "right": "right_q", "result": "result_q"}


def streaming_join(
    df: DataFrame,
    specs: Sequence[JoinSpec | SpecTemplate],
    columns: InputColumns,
    kind: TimeKind,
    *,
    buckets: int,
    rejected: bool,
) -> DataFrame | tuple[DataFrame, DataFrame]:
    """The streaming pairs of `df` (and its rejected rows): `complement_join` on a stream."""
    check_state_store(df.sparkSession)
    relevant = _relevant(specs, F.col(columns.quantity))
    reason = rejection_reason(df, columns)
    join_settings: dict[str, Any] = {
        "to_ms": kind.to_ms,
        "flush": False,
        "rejected": rejected,
        "has_order": columns.order is not None,
        "integer_time": kind.is_timestamp,
        "times_from_engine": True,
    }
    join = BucketJoin([], **join_settings)
    grouped = bucketed(df.filter(relevant & reason.isNull()), columns, kind, buckets)
    out = grouped.groupBy("bucket").transformWithStateInPandas(
        statefulProcessor=StreamBucketJoin(specs, join_settings),
        outputStructType=output_schema(grouped, kind, join.columns, list(NAME_COLUMNS.values())),
        outputMode="Append",
        timeMode="None",
    )
    found = pairs(out, lambda role: F.col(NAME_COLUMNS[role]), kind)
    if not rejected:
        return found
    bad_rows = df.filter(F.col(columns.quantity).isNull() | relevant).filter(reason.isNotNull())
    return found, rejected_rows(df, columns, kind, out, bad_rows.withColumn("reason", reason))


def check_state_store(spark: SparkSession) -> None:
    """Raise `ConfigError` unless the session keeps streaming state in RocksDB, as
    transformWithState requires."""
    provider = spark.conf.get(_STATE_STORE_CONF, None)
    if provider != ROCKSDB_PROVIDER:
        raise ConfigError(
            "complement_join on a streaming DataFrame needs the RocksDB state store: "
            f'spark.conf.set("{_STATE_STORE_CONF}", "{ROCKSDB_PROVIDER}")'
        )


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


def _relevant(specs: Sequence[JoinSpec | SpecTemplate], quantity: Column) -> Column:
    """Whether a row's quantity is a side of one of the specs (templates: by their patterns)."""
    names = sorted({q for s in specs if isinstance(s, JoinSpec) for q in (s.left, s.right)})
    relevant = quantity.isin(names)
    for template in specs:
        if isinstance(template, SpecTemplate):
            relevant = relevant | quantity.rlike(_pattern(template))
    return relevant


def _pattern(template: SpecTemplate) -> str:
    """The quantities of `template`'s sides as a Java regular expression ({c}: any text)."""
    sides = (re.escape(name).replace(r"\{c\}", ".+") for name in (template.left, template.right))
    return "|".join(f"^{side}$" for side in sides)
