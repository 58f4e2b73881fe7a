"""The complement join of a streaming DataFrame: the pipeline's stateful join, the caller's columns.

Things are bucketed as in batch (`_batch_input.bucketed`); each bucket's micro-batch goes through
a `transformWithStateInPandas` processor that keeps every thing's engines in a MapState
(`spark.stored_engines`, as `statestream run join` does) and joins the batch's records, in arrival
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
from collections.abc import Sequence
from typing import Any

from pyspark import __version__ as pyspark_version
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from statestream.errors import ConfigError
from statestream.join import JoinSpec, SpecTemplate
from statestream.spark._batch_input import InputColumns, TimeKind, bucketed, rejection_reason
from statestream.spark._bucket_join import BucketJoin
from statestream.spark._pair_rows import output_schema, pairs, rejected_rows
from statestream.spark._stream_bucket import NAME_COLUMNS
from statestream.spark._stream_processor import StreamBucketJoin
from statestream.spark.stored_engines import ROCKSDB_PROVIDER

_STATE_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"


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
    by_bucket = with_state_api(
        grouped.groupBy("bucket"), "complement_join on a streaming DataFrame"
    )
    out = by_bucket.transformWithStateInPandas(
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


def with_state_api(grouped: Any, what: str) -> Any:
    """`grouped` (a GroupedData), which must have `transformWithStateInPandas`: Spark Connect's
    client has it from PySpark 4.1 on; before, `ConfigError` says that `what` needs it."""
    if not hasattr(grouped, "transformWithStateInPandas"):
        raise ConfigError(
            f"{what} of a Spark Connect session needs PySpark 4.1 or later: PySpark "
            f"{pyspark_version}'s Connect client has no transformWithStateInPandas; use a "
            "classic session or a newer PySpark"
        )
    return grouped


def check_state_store(spark: SparkSession) -> None:
    """Raise `ConfigError` unless the session keeps streaming state in RocksDB, as
    transformWithState requires."""
    provider = spark.conf.get(_STATE_STORE_CONF, None)
    if provider != ROCKSDB_PROVIDER:
        raise ConfigError(
            "complement_join on a streaming DataFrame needs the RocksDB state store: "
            f'spark.conf.set("{_STATE_STORE_CONF}", "{ROCKSDB_PROVIDER}")'
        )


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
