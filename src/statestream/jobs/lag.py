"""A streaming query's Kafka lag: the records between the offsets it has committed and the ends
of the topics it reads, per partition and summed.

Spark's Kafka source commits no offsets to Kafka; what a query has done is in its checkpoint and
its progress reports. Batch N's `offsets/N` holds, per Kafka source, the offset each partition
is read up to, and `commits/N` exists once the batch is done (`committed_offsets`); each
progress report, sent after its batch committed, has the same offsets as its sources'
`endOffset` (`progress_offsets`). A partition's lag is its end offset minus that, at least 0;
the end offsets are the ones a `read_committed` consumer sees (the last stable offset), which is
where Spark's source, reading `read_committed`, stops (`end_offsets`).

`statestream status`, the dashboard's health panel and a chaos run's samples (`progress_lag`)
all compute a query's lag here:

    >>> found = query_lag({"machine.data": {0: 90, 1: 50}}, {"machine.data": {0: 100, 1: 50}})
    >>> found.as_json()
    {'total': 10, 'topics': {'machine.data': {'0': 10, '1': 0}}}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statestream.config import Settings
from statestream.errors import ConfigError

if TYPE_CHECKING:
    from confluent_kafka import Consumer

PartitionOffsets = dict[int, int]  # partition → offset
TopicOffsets = dict[str, PartitionOffsets]  # topic → partition → offset
LAG_TIMEOUT_S = 3.0  # how long `statestream status` waits for Kafka's end offsets


@dataclass(frozen=True)
class QueryLag:
    """A query's lag: topic → partition → records behind the end."""

    topics: Mapping[str, Mapping[int, int]]

    @property
    def total(self) -> int:
        return sum(n for partitions in self.topics.values() for n in partitions.values())

    def as_json(self) -> dict[str, Any]:
        """`{"total": n, "topics": {topic: {partition: n}}}`, partitions as JSON keys (text):
        the shape `statestream status --json` and the dashboard's health give."""
        topics = {
            topic: {str(p): n for p, n in sorted(partitions.items())}
            for topic, partitions in sorted(self.topics.items())
        }
        return {"total": self.total, "topics": topics}


def lag(end_offsets: Mapping[int, int], positions: Mapping[int, int]) -> int:
    """Records between `positions` and the end, over the partitions both know.

    >>> lag({0: 10, 1: 5}, {0: 7, 1: 5})
    3
    """
    return sum(max(0, end - positions[p]) for p, end in end_offsets.items() if p in positions)


def query_lag(
    committed: Mapping[str, Mapping[int, int]], ends: Mapping[str, Mapping[int, int]]
) -> QueryLag | None:
    """The lag of a query that committed `committed`, given the topics' `ends`: each partition
    both know. None when the end of no topic the query reads is known (lag unknown)."""
    topics: TopicOffsets = {}
    for topic, positions in committed.items():
        end = ends.get(topic, {})
        behind = {p: max(0, end[p] - offset) for p, offset in positions.items() if p in end}
        if behind:
            topics[topic] = behind
    return QueryLag(topics) if topics else None


def source_offsets(value: Any) -> TopicOffsets:
    """The Kafka offsets of one source, `{topic: {"0": offset, …}}` as Spark writes them (JSON
    text or data); {} for a source that is not Kafka's or cannot be read.

    >>> source_offsets('{"machine.data":{"0":1400,"1":7}}')
    {'machine.data': {0: 1400, 1: 7}}
    >>> source_offsets('{"logOffset":3}')
    {}
    """
    try:
        data = json.loads(value) if isinstance(value, str | bytes) else value
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    offsets: TopicOffsets = {}
    for topic, partitions in data.items():
        if isinstance(partitions, dict) and partitions:
            try:
                offsets[str(topic)] = {int(p): _offset(o) for p, o in partitions.items()}
            except (TypeError, ValueError):
                continue
    return offsets


def _offset(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an offset: {value!r}")
    return value


def progress_offsets(progress: Mapping[str, Any]) -> TopicOffsets:
    """The offsets a progress report's batch read up to: its Kafka sources' `endOffset`."""
    offsets: TopicOffsets = {}
    for source in progress.get("sources") or []:
        if isinstance(source, dict):
            offsets.update(source_offsets(source.get("endOffset")))
    return offsets


def progress_lag(progress: Mapping[str, Any]) -> int:
    """Records a progress report's Kafka sources had yet to read when its batch ended: each
    source's `latestOffset` (the topics' ends then) against its `endOffset` (what the batch read
    up to), over the partitions both know, summed; 0 when no source gives both.

    >>> source = {"endOffset": '{"in":{"0":90,"1":7}}', "latestOffset": {"in": {"0": 100, "1": 7}}}
    >>> progress_lag({"sources": [source, {"endOffset": {"logOffset": 3}}]})
    10
    """
    total = 0
    for source in progress.get("sources") or []:
        if isinstance(source, dict):
            read = source_offsets(source.get("endOffset"))
            ends = source_offsets(source.get("latestOffset"))
            behind = query_lag(read, ends)
            total += behind.total if behind is not None else 0
    return total


def committed_offsets(checkpoint: Path) -> TopicOffsets:
    """The Kafka offsets of the newest batch of `checkpoint` that committed (`offsets/N` whose
    `commits/N` exists): topic → partition → offset; {} when none did or it cannot be read."""
    try:
        planned = {int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()}
        done = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    except OSError:
        return {}
    batches = planned & done
    if not batches:
        return {}
    try:
        lines = (checkpoint / "offsets" / str(max(batches))).read_text().splitlines()
    except OSError:
        return {}
    offsets: TopicOffsets = {}
    for line in lines[2:]:  # "v1", the batch's metadata, then one line per source
        offsets.update(source_offsets(line))
    return offsets


def partitions_to_ask(
    committed: Iterable[Mapping[str, Mapping[int, int]]], known: Mapping[str, Mapping[int, int]]
) -> dict[str, list[int]]:
    """The partitions of `committed` offsets whose end is not in `known`, per topic.

    >>> partitions_to_ask([{"a": {0: 1, 1: 2}}, {"b": {0: 5}}], {"a": {0: 9, 1: 9}})
    {'b': [0]}
    """
    wanted: dict[str, set[int]] = {}
    for offsets in committed:
        for topic, partitions in offsets.items():
            missing = set(partitions) - set(known.get(topic, {}))
            if missing:
                wanted.setdefault(topic, set()).update(missing)
    return {topic: sorted(partitions) for topic, partitions in sorted(wanted.items())}


def end_offsets(
    consumer: Consumer, partitions: Mapping[str, Iterable[int]], timeout_s: float
) -> TopicOffsets:
    """The end offset of each of `partitions` as `consumer` sees it (the last stable offset for
    a `read_committed` consumer), asked within `timeout_s` in all; a partition Kafka does not
    answer for in time is left out."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    ends: TopicOffsets = {}
    for topic, numbers in partitions.items():
        for p in numbers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ends
            try:
                high = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=remaining, cached=False
                )[1]
            except KafkaException:
                continue
            if high >= 0:
                ends.setdefault(topic, {})[p] = high
    return ends


def query_lags(
    settings: Settings,
    committed: Sequence[Mapping[str, Mapping[int, int]]],
    timeout_s: float = LAG_TIMEOUT_S,
) -> list[QueryLag | None]:
    """The lag of each query of `committed` (its committed offsets), from one short-lived Kafka
    consumer that has `timeout_s` for the end offsets; every lag is None (unknown) when Kafka
    does not answer in time, or when `timeout_s` is 0."""
    wanted = partitions_to_ask(committed, {})
    ends = kafka_end_offsets(settings, wanted, timeout_s) if wanted and timeout_s > 0 else {}
    return [query_lag(offsets, ends) for offsets in committed]


def kafka_end_offsets(
    settings: Settings, partitions: Mapping[str, Iterable[int]], timeout_s: float
) -> TopicOffsets:
    """`end_offsets` of `partitions` from a consumer of its own (`read_committed`, the admin's
    login); {} when Kafka does not answer within `timeout_s`, or there is no login yet (the
    local brokers' passwords are made by `statestream services up`)."""
    from confluent_kafka import Consumer, KafkaException

    try:
        login = settings.kafka.client_config()
    except ConfigError:
        return {}
    consumer = Consumer(
        {
            **login,
            "group.id": f"statestream-lag-{os.getpid()}",  # never joined: no group is made
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        start = time.monotonic()
        try:
            consumer.list_topics(timeout=timeout_s)  # does Kafka answer at all?
        except KafkaException:
            return {}
        return end_offsets(consumer, partitions, timeout_s - (time.monotonic() - start))
    finally:
        consumer.close()
