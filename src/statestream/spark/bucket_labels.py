"""Bucket labels that Spark's hash partitioning spreads evenly over the shuffle partitions.

The Spark jobs group many things into one stateful call per bucket (`jobs.machine_input`); each
bucket is named by a label computed here with Spark's own partitioning hash (Murmur3_x86_32, seed
42, as `HashPartitioning` computes it). It is a state-key contract, not a patch: it changes nothing
in Spark and is never turned off, not even by `spark.patches`, for the labels are the keys of the
jobs' state and other labels would orphan the state of every checkpoint. On a PySpark it was not
checked against, `spark.patches.spark_conf` only warns that the spread may be uneven.
"""

from __future__ import annotations

from statestream.spark.patches._checks import unsupported

NAME = "bucket_labels"
WRITTEN_FOR = "4."  # HashPartitioning's Murmur3 with seed 42, checked against Spark in the tests


def applies() -> str | None:
    """None when this PySpark's hash partitioning is the one the labels were checked against."""
    return unsupported(WRITTEN_FOR)


def bucket_labels(buckets: int) -> list[int]:
    """The grouping key of each bucket: labels that Spark's hash partitioning spreads evenly.

    Spark places a group by Murmur3(key) modulo its shuffle partitions, and for keys 0…7 that is
    5 to 3 over 2 partitions. Label i is the first number after label i − 1 with
    Murmur3(n) mod 64 = i mod 64, so any partition count dividing 64 gets an equal share of the
    buckets when it divides their number. Labels depend on nothing else: they are state keys.
    """
    labels: list[int] = []
    candidate = 0
    for i in range(buckets):
        while spark_partition(candidate, 64) != i % 64:
            candidate += 1
        labels.append(candidate)
        candidate += 1
    return labels


def spark_partition(value: int, partitions: int) -> int:
    """The shuffle partition of int grouping key `value`: Murmur3_x86_32(value, seed 42) pmod n."""

    def rotate(x: int, bits: int) -> int:
        return ((x << bits) | (x >> (32 - bits))) & _MASK

    k = rotate((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h = (rotate(42 ^ k, 13) * 5 + 0xE6546B64) & _MASK
    h ^= 4  # the length in bytes
    h = (h ^ (h >> 16)) * 0x85EBCA6B & _MASK
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    signed = h - (1 << 32) if h & 0x80000000 else h
    return signed % partitions


_MASK = 0xFFFFFFFF
