"""How many buckets a join hashes its keys into unless told, and whether a batch join's inputs
are small enough to join in one task, without a shuffle.

Small is Spark's own rule for a side it would broadcast: the optimizer's size estimate of the
inputs together (the one `df.explain("cost")` prints) is at most
`spark.sql.autoBroadcastJoinThreshold` (10 MB unless set; -1 turns it off). On such an input a
shuffle's map stages and sorts cost more than the join, and adaptive execution would make its
reduce side one task anyway. Only a classic session shows its estimate: on Spark Connect, or a
DataFrame whose size Spark does not know (made from an RDD, or from pandas without Arrow), the
answer is no.
"""

from __future__ import annotations

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.sql import DataFrame

DEFAULT_BUCKETS = 200  # Spark's default of spark.sql.shuffle.partitions


def default_buckets(df: DataFrame) -> int:
    """The buckets of a join not given any: the session's `spark.sql.shuffle.partitions`."""
    value = df.sparkSession.conf.get("spark.sql.shuffle.partitions", str(DEFAULT_BUCKETS))
    return int(value) if value and value.isdigit() else DEFAULT_BUCKETS


def fits_one_task(*frames: DataFrame) -> bool:
    """Whether Spark's estimate of `frames` together is at most the size it broadcasts."""
    if not frames:
        return True
    try:
        session = frames[0].sparkSession._jsparkSession
        limit = int(session.sessionState().conf().autoBroadcastJoinThreshold())
        sizes = [
            int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
            for df in frames
        ]
    except (AttributeError, Py4JError):  # Connect has no JVM handle; a refusal: "don't know"
        return False
    return limit >= 0 and sum(sizes) <= limit
