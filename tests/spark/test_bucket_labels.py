"""The bucket labels of the Spark jobs: Spark's own hash partitioning spreads them evenly."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from statestream.spark.bucket_labels import bucket_labels, spark_partition


@pytest.mark.parametrize("buckets", [1, 2, 8, 12, 64, 100])
def test_bucket_labels_are_distinct_and_spread_evenly(buckets: int) -> None:
    labels = bucket_labels(buckets)
    assert len(set(labels)) == buckets
    for partitions in (1, 2, 4, 8):
        if buckets % partitions == 0:
            shares = Counter(spark_partition(label, partitions) for label in labels)
            assert sorted(shares.values()) == [buckets // partitions] * partitions


def test_labels_do_not_change_with_the_bucket_count() -> None:
    assert bucket_labels(16)[:8] == bucket_labels(8)


def test_the_partition_of_a_label_is_the_one_spark_gives(spark: SparkSession) -> None:
    labels = spark.range(-300, 3000).select(F.col("id").cast("int").alias("n"))
    rows = labels.select("n", F.pmod(F.hash("n"), F.lit(64)).alias("p")).collect()
    assert [(r.n, spark_partition(r.n, 64)) for r in rows] == [(r.n, r.p) for r in rows]
    grouped = spark.createDataFrame([(label,) for label in bucket_labels(8)], "b int")
    per_partition = grouped.repartition(2, "b").rdd.glom().map(len).collect()
    assert per_partition == [4, 4]
