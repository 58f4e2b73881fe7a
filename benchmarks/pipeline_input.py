"""Input of `statestream bench pipeline`: the real sample scaled up, its expected pairs, a producer.

The sample's 5,000 wide rows (19,825 records) are cloned into as many machines as the wanted
record count needs; each clone is shifted in time by up to a minute and jittered by ±20 ms, and
all records arrive in time order across machines, as a fleet streaming live would deliver them.
The expected pairs are the engine's own output for that arrival order without a final flush,
which is what the streaming join must publish (the integration tests check that equality).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from confluent_kafka import Producer

from statestream.codecs.formats import RecordColumns, json_number, parse_line
from statestream.config import Settings
from statestream.join import JoinRouter, JoinSpec, RoutedStep

SAMPLE = Path(__file__).resolve().parents[1] / "src/statestream/data/machine_events.jsonl"
PAIR_KEY = ["thing", "left_t", "right_t"]


@dataclass(frozen=True)
class ScaledRecords:
    """Narrow machine records in arrival order, as columns."""

    things: np.ndarray  # object (str)
    quantities: np.ndarray  # object (str)
    t: np.ndarray  # int64, epoch ms
    v: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.t)

    def head(self, count: int) -> ScaledRecords:
        """The first `count` records."""
        part = slice(0, count)
        return ScaledRecords(self.things[part], self.quantities[part], self.t[part], self.v[part])

    @property
    def thing_count(self) -> int:
        return len(set(self.things.tolist()))

    def kafka_messages(self, start: int = 0, stop: int | None = None) -> list[tuple[str, str]]:
        """(key, value) of records `start:stop` in the seed's record format."""
        part = slice(start, stop)
        return [
            (
                f"{thing}.{quantity}",
                f'{{"thing": "{thing}", "quantity": "{quantity}", '
                f'"phenomenonTime": {t}, "result": {json_number(v)}}}',
            )
            for thing, quantity, t, v in zip(
                self.things[part].tolist(),
                self.quantities[part].tolist(),
                self.t[part].tolist(),
                self.v[part].tolist(),
                strict=True,
            )
        ]


def scaled_sample(min_records: int, seed: int = 7) -> ScaledRecords:
    """The sample cloned into enough machines for at least `min_records` records, time-ordered."""
    columns = RecordColumns()
    for number, line in enumerate(SAMPLE.read_bytes().splitlines(), 1):
        parse_line(line, number, columns)
    base_things = np.array(columns.things, dtype=object)
    base_q = np.array(columns.quantities, dtype=object)
    base_t = np.array(columns.times, dtype=np.int64)
    base_v = np.array(columns.values, dtype=np.float64)
    copies = max(1, -(-min_records // len(base_t)))
    rng = np.random.default_rng(seed)
    shift = rng.integers(0, 60_000, size=copies)
    jitter = rng.integers(-20, 21, size=(copies, len(base_t)))
    t = (base_t[None, :] + shift[:, None] + jitter).ravel()
    suffix = np.repeat(np.array([f"-{k:04d}" for k in range(copies)], dtype=object), len(base_t))
    things = np.tile(base_things, copies) + suffix
    order = np.argsort(t, kind="stable")
    return ScaledRecords(
        things[order], np.tile(base_q, copies)[order], t[order], np.tile(base_v, copies)[order]
    )


def expected_pairs(records: ScaledRecords, specs: list[JoinSpec]) -> pd.DataFrame:
    """The spec's pairs of `records` in arrival order, no flush: thing, left_t, right_t."""
    parts = [
        pd.DataFrame(
            {"thing": s.thing, "left_t": s.step.pairs.left_t, "right_t": s.step.pairs.right_t}
        )
        for _, steps in joined_slices(records, specs, 200_000)
        for s in steps
        if len(s.step.pairs)
    ]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PAIR_KEY)
    return frame.astype({"left_t": np.int64, "right_t": np.int64})


def joined_slices(
    records: ScaledRecords, specs: list[JoinSpec], size: int
) -> Iterator[tuple[int, list[RoutedStep]]]:
    """`records` joined offline `size` at a time, in arrival order: (first record, steps) each."""
    router = JoinRouter(specs)
    times = records.t.astype(np.float64)
    for start in range(0, len(records), size):
        part = slice(start, start + size)
        yield (
            start,
            router.process(
                records.things[part], records.quantities[part], times[part], records.v[part]
            ),
        )


def record_producer(settings: Settings) -> Producer:
    """The bench's producer of input records (idempotent, lz4, batches of up to 10,000)."""
    return Producer(
        {
            **settings.kafka.client_config(),
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "lz4",
        }
    )


def produce(
    settings: Settings,
    topic: str,
    records: ScaledRecords,
    rate: float | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
    producer: Producer | None = None,
) -> np.ndarray:
    """Produce `records` to `topic`, at most `rate` records/s; the send time (epoch s) of each.

    Sends in slices of 1/100 s worth of records when paced, or 10,000 at a time at full speed;
    returns early (with NaN for the unsent) when `stop` is set. `producer`: one that has sent
    before (`record_producer`), so that the send times are a running producer's: a new one
    holds its first records ~0.5 s while it gets its producer id (login, idempotence).
    """
    producer = producer or record_producer(settings)
    sent_at = np.full(len(records), np.nan)
    step = slice_size(rate)
    started = time.time()
    for start in range(0, len(records), step):
        if stop is not None and stop.is_set():
            break
        if rate:
            wait = started + start / rate - time.time()
            if wait > 0:
                time.sleep(wait)
        sent_at[start : start + step] = time.time()
        for key, value in records.kafka_messages(start, start + step):
            _produce(producer, topic, key, value)
        producer.poll(0)
        if on_progress is not None:
            on_progress(min(start + step, len(records)))
    producer.flush(120)
    return sent_at


def slice_size(rate: float | None) -> int:
    """Records `produce` sends at once (with one send time): 1/100 s worth, or 10,000 unpaced."""
    return max(1, int(rate / 100)) if rate else 10_000


def _produce(producer: Producer, topic: str, key: str, value: str) -> None:
    while True:
        try:
            producer.produce(topic, key=key, value=value)
            return
        except BufferError:
            producer.poll(0.05)


def pair_keys_from_json(values: list[bytes]) -> pd.DataFrame:
    """thing, left_t, right_t of pairs in the output format."""
    rows = [json.loads(v) for v in values]
    return pd.DataFrame(
        {
            "thing": [r["thing"] for r in rows],
            "left_t": np.array([r["left"]["phenomenonTime"] for r in rows], dtype=np.int64),
            "right_t": np.array([r["right"]["phenomenonTime"] for r in rows], dtype=np.int64),
        },
        columns=PAIR_KEY,
    )


def compare_pairs(expected: pd.DataFrame, got: pd.DataFrame) -> tuple[int, int, int]:
    """(pairs in both, expected but missing, extra) by thing, left time and right time."""
    merged = expected.drop_duplicates().merge(
        got.drop_duplicates(), on=PAIR_KEY, how="outer", indicator=True
    )
    counts = merged["_merge"].value_counts()
    return (
        int(counts.get("both", 0)),
        int(counts.get("left_only", 0)),
        int(counts.get("right_only", 0)),
    )
