"""The one shape of bad input: dead-letter records and late records, built here for every stage.

Every stage that refuses a record writes it in the same shape, so one consumer of the dead-letter
and late topics reads them all:

- **dead letter** (`dead_letter`): a record a stage cannot take — bad JSON, a missing field, a
  value of the wrong type, oversize — with the reason and the raw input;
- **late record** (`late_record`): a good record older than its series' watermark, decoded, with
  the watermark it met.

Both carry where the record came from (`stage`, `source_topic`, `partition`, `offset`) and when
the stage took it in (`ingested_at`, epoch ms: the connector's receive time; for a Spark stage the
time its task read the batch — Kafka's timestamp is not read along with every record only for the
few refused, and `source_topic`/`partition`/`offset` find the record in Kafka). A stage adds its
own fields after the common ones (`**extra`), never in place of one.

The raw input is kept as UTF-8 text when it is valid UTF-8, else as base64 (`raw_encoding`), cut
at `raw_limit` bytes (`truncated`; `raw_bytes` is the whole input's size), so a dead letter always
fits in Kafka whatever came in:

    >>> record = dead_letter("join", "bad JSON", b'{"thing": ', source_topic="machine.data",
    ...                      partition=2, offset=17, ingested_at=1700000000000)
    >>> [(name, record[name]) for name in ("stage", "reason", "partition", "offset")]
    [('stage', 'join'), ('reason', 'bad JSON'), ('partition', 2), ('offset', 17)]
    >>> record["raw"], record["raw_encoding"], record["raw_bytes"], record["truncated"]
    ('{"thing": ', 'utf-8', 10, False)
    >>> cut = dead_letter("ingest", "too big", b"\\xff" * 40, source_topic="m/s", raw_limit=4,
    ...                   kind="oversize")
    >>> cut["raw"], cut["raw_encoding"], cut["raw_bytes"], cut["truncated"], cut["kind"]
    ('/////w==', 'base64', 40, True, 'oversize')
"""

from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Sequence
from typing import Any, Literal, TypedDict, get_args

Stage = Literal["ingest", "join", "stats", "sink_influx", "bunching", "geo", "quantity_stats"]
STAGES: tuple[str, ...] = get_args(Stage)
REJECT_COLUMNS = ("reason", "raw", "partition", "offset")  # a decoder's rejects, each a letter
RAW_LIMIT_BYTES = 16_384
"""Bytes of a refused input kept in its dead letter (the connector: its setting)."""
REASON_LIMIT_CHARS = 1_000
"""A longer reason (one quoting a huge value) is cut there and ends with "…"."""


class Origin(TypedDict):
    """The fields every dead-letter and late record starts with."""

    stage: str  # one of STAGES
    reason: str  # never empty, at most REASON_LIMIT_CHARS; "late" for a late record
    source_topic: str  # the Kafka topic, or the MQTT topic / file name for the connector
    partition: int | None  # None where the source has none (MQTT, a file)
    offset: int | None
    ingested_at: int  # epoch ms


class DeadLetter(Origin):
    """A refused input: `Origin` + the raw input (+ the stage's own fields)."""

    raw: str | None  # None: the Kafka value was null
    raw_encoding: Literal["utf-8", "base64"] | None
    raw_bytes: int  # the whole input's size, before any cut
    truncated: bool


class LateRecord(Origin):
    """A record older than its series' watermark: `Origin` + the record (+ the stage's fields)."""

    thing: str
    quantity: str
    phenomenonTime: float | None  # epoch ms; None stands for a non-finite number
    result: float | None
    watermark: float | None


DEAD_LETTER_FIELDS: tuple[str, ...] = tuple(DeadLetter.__annotations__)
LATE_FIELDS: tuple[str, ...] = tuple(LateRecord.__annotations__)


def dead_letter(
    stage: Stage,
    reason: str,
    raw: bytes | str | None,
    *,
    source_topic: str,
    partition: int | None = None,
    offset: int | None = None,
    ingested_at: int | None = None,
    raw_limit: int = RAW_LIMIT_BYTES,
    **extra: Any,
) -> dict[str, Any]:
    """The dead letter of `raw`, refused by `stage` for `reason` (see the module for the shape).

    `ingested_at` defaults to now; `extra` are the stage's own fields (e.g. the connector's
    `kind`). Raises `ValueError` for an unknown stage, an empty reason or an extra field that
    would replace a common one — mistakes of the calling code, not of the input.
    """
    record: dict[str, Any] = _origin(stage, reason, source_topic, partition, offset, ingested_at)
    record.update(raw_fields(raw, raw_limit))
    return _with_extra(record, extra)


def late_record(
    stage: Stage,
    *,
    thing: str,
    quantity: str,
    phenomenon_time: float,
    result: float,
    watermark: float,
    source_topic: str,
    partition: int | None = None,
    offset: int | None = None,
    ingested_at: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The late record of a decoded record that met `watermark` (reason "late").

    Non-finite numbers become null, so the record is always valid JSON; `extra` are the stage's
    own fields (the join: `series`, `join`; the statistics: `allowed_lateness_ms`).
    """
    record: dict[str, Any] = _origin(stage, "late", source_topic, partition, offset, ingested_at)
    record.update(
        thing=thing,
        quantity=quantity,
        phenomenonTime=_finite(phenomenon_time),
        result=_finite(result),
        watermark=_finite(watermark),
    )
    return _with_extra(record, extra)


def late_series_records(
    stage: Stage,
    thing: str,
    quantity: str,
    times: Sequence[float],
    values: Sequence[float],
    watermarks: Sequence[float],
    origins: Sequence[tuple[str, int, int]],
    allowed_lateness_ms: float,
) -> list[tuple[str, str]]:
    """The late records of one series' records, each as (key `thing.quantity`, JSON value):
    `late_record` with the watermark each met and the allowed lateness (the windowed queries').

    `origins` holds (source topic, partition, offset) per record.
    """
    return [
        (
            f"{thing}.{quantity}",
            to_json(
                late_record(
                    stage,
                    thing=thing,
                    quantity=quantity,
                    phenomenon_time=t,
                    result=v,
                    watermark=w,
                    source_topic=topic,
                    partition=partition,
                    offset=offset,
                    allowed_lateness_ms=allowed_lateness_ms,
                )
            ),
        )
        for t, v, w, (topic, partition, offset) in zip(
            times, values, watermarks, origins, strict=True
        )
    ]


def raw_fields(raw: bytes | str | None, raw_limit: int = RAW_LIMIT_BYTES) -> dict[str, Any]:
    """`raw`, `raw_encoding`, `raw_bytes`, `truncated` of an input (the rule in the module)."""
    if raw is None:
        return {"raw": None, "raw_encoding": None, "raw_bytes": 0, "truncated": False}
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    cut, truncated = data[:raw_limit], len(data) > raw_limit
    text, encoding = _utf8(cut, truncated), "utf-8"
    if text is None:
        text, encoding = base64.b64encode(cut).decode("ascii"), "base64"
    return {"raw": text, "raw_encoding": encoding, "raw_bytes": len(data), "truncated": truncated}


def to_json(record: dict[str, Any]) -> str:
    """A dead-letter or late record as the JSON text that goes to Kafka (strict JSON: no NaN)."""
    return json.dumps(record, allow_nan=False)


def now_ms() -> int:
    """The current time in epoch ms (the `ingested_at` of a record taken in now)."""
    return time.time_ns() // 1_000_000


def _origin(
    stage: str,
    reason: str,
    source_topic: str,
    partition: int | None,
    offset: int | None,
    ingested_at: int | None,
) -> dict[str, Any]:
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    if not reason:
        raise ValueError("a dead-letter or late record needs a reason")
    if len(reason) > REASON_LIMIT_CHARS:
        reason = reason[: REASON_LIMIT_CHARS - 1] + "…"
    return {
        "stage": stage,
        "reason": reason,
        "source_topic": source_topic,
        "partition": None if partition is None else int(partition),
        "offset": None if offset is None else int(offset),
        "ingested_at": now_ms() if ingested_at is None else int(ingested_at),
    }


def _with_extra(record: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    clash = record.keys() & extra.keys()
    if clash:
        raise ValueError(f"a stage's own fields cannot replace common ones: {sorted(clash)}")
    record.update(extra)
    return record


def _finite(number: float) -> float | None:
    number = float(number)
    return number if math.isfinite(number) else None


def _utf8(raw: bytes, truncated: bool) -> str | None:
    """`raw` as text when it is UTF-8 (a cut input may end inside a character); else None."""
    for cut in range(4 if truncated else 1):
        try:
            return raw[: len(raw) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None
