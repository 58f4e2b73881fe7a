"""`write_exactly_once`: a streaming DataFrame to a Kafka topic, each record exactly once.

The caller's rows go through statestream's own Spark sink (`jvm/exactly-once`, started by the one
query runner `exactly_once.sink.start_query`): each task writes its partition's records of a
micro-batch in one Kafka transaction, with a commit marker on the commits topic in the same
transaction (why this is exactly once: `statestream.exactly_once`). `statestream.spark`
re-exports `write_exactly_once`.

    >>> pairs = complement_join(stream, [SpecTemplate()], order="offset")  # doctest: +SKIP
    >>> query = write_exactly_once(
    ...     pairs, "machine.pairs", checkpoint="/data/checkpoints/pairs", query_name="pairs"
    ... )                                                                # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from statestream.config import Settings, load_settings
from statestream.errors import ConfigError, EnvironmentProblem
from statestream.exactly_once.sink import SINK_FORMAT, QueryRun, start_query


def write_exactly_once(
    df: DataFrame,
    topic: str,
    *,
    checkpoint: str | Path,
    query_name: str,
    key: Column | str | None = None,
    settings: Settings | None = None,
    available_now: bool = False,
    trigger_interval_s: float = 1.0,
) -> StreamingQuery:
    """Start a query writing each row of the streaming `df` to `topic` as one JSON record.

    A record's value is the row as a JSON object (`to_json`); its key is `key` (a column or a
    column name), by default `thing.quantity` when `df` has both columns (a pair's key on
    machine.out), else none. Kafka is reached with `settings` (default: `load_settings()`, the
    section `kafka`; the markers go to `settings.topics.commits`, created if missing).

    What is exactly once: a consumer reading `topic` with `isolation.level=read_committed` sees
    every row of every micro-batch once, through task retries and query restarts, *provided*
    the query is restarted with the same `checkpoint` and the same `query_name` (together they
    are the output's lineage: the transactional ids are `statestream.<query_name>.<the
    checkpoint's query id>.<partition>`), `df` recomputes the same rows for a replayed batch
    (true of `complement_join` over a replayable source: Kafka, files), and the commits topic
    is kept. A new checkpoint is a new lineage: its output is written again from its start.
    `read_uncommitted` consumers may also see the records of aborted attempts.

    Returns the started query; `available_now` processes what is there and stops.
    """
    if not df.isStreaming:
        raise ConfigError("write_exactly_once writes a streaming DataFrame; use df.write for batch")
    settings = settings or load_settings()
    _check_sink_on_classpath(df)
    run = QueryRun(
        name=query_name,
        checkpoint=Path(checkpoint),
        interval_s=trigger_interval_s,
        available_now=available_now,
    )
    return start_query(packed_records(df, topic, _key(df, key)), settings, run)


def packed_records(df: DataFrame, topic: str, key: Column | None) -> DataFrame:
    """Each row of `df` as one packed row of the sink (`exactly_once.packed_rows`): one record
    each."""
    key_text = F.to_json(F.array((key if key is not None else F.lit(None)).cast("string")))
    keys = F.regexp_replace(key_text, r"^\[(.*)\]$", "[[$1,1]]")  # ["k"] → [["k",1]]
    value = F.to_json(F.struct(*(F.col(f"`{name}`") for name in df.columns))).cast("binary")
    packed = df.select(
        F.lit("pair").alias("kind"),
        F.lit(topic).alias("topic"),
        F.lit(1).cast("long").alias("count"),
        keys.alias("keys"),
        value.alias("values"),
    )
    return packed


def _key(df: DataFrame, key: Column | str | None) -> Column | None:
    if isinstance(key, str):
        return F.col(key)
    if key is not None:
        return key
    if {"thing", "quantity"} <= set(df.columns):
        return F.concat_ws(".", F.col("thing"), F.col("quantity"))
    return None


def _check_sink_on_classpath(df: DataFrame) -> None:
    """Raise `EnvironmentProblem` unless the session's JVM has the exactly-once sink."""
    jvm = df.sparkSession.sparkContext._jvm
    assert jvm is not None  # a DataFrame's session has started its JVM
    try:
        jvm.java.lang.Class.forName(
            SINK_FORMAT, True, jvm.java.lang.Thread.currentThread().getContextClassLoader()
        )
    except Exception as problem:
        raise EnvironmentProblem(
            "the exactly-once Kafka sink is not on this Spark session's class path: start the "
            "session with spark.jars including statestream-exactly-once.jar (`make setup` builds "
            "it in .deps/jars/exactly-once; statestream.jobs.session.statestream_jars lists them)"
        ) from problem
