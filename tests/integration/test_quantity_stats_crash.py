"""kill -9 the quantity statistics job in the middle of batches, restart it from its
checkpoint: every window, late record and dead letter exactly once in read_committed output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from confluent_kafka import Producer

from statestream.config import Settings
from statestream.queries.quantity_stats.job import quantity_spec
from tests.integration.crash_support import crash_and_finish
from tests.integration.quantity_support import (
    assert_written_as_the_reference,
    produce_records,
    quantity_topic_settings,
    read_json,
    repeated_keys,
    topic_env,
)

pytestmark = pytest.mark.integration

BASE_MS = 1_554_096_000_000
TIME_RULES = {"window_s": 10.0, "out_of_orderness_s": 2.0, "allowed_lateness_s": 10.0}


def _env(settings: Settings) -> dict[str, str]:
    """The topics and the time rules, for `run quantity-stats`."""
    rules = {f"STATESTREAM_QUANTITY_STATS__{k.upper()}": str(v) for k, v in TIME_RULES.items()}
    return {**topic_env(settings), **rules}


def _machine_series() -> pd.DataFrame:
    """Three machines, two quantities each, 5 minutes at 1 Hz in order, interleaved as machines
    send them; one record of M2 load comes 40 s late (beyond the allowed lateness)."""
    seconds = np.arange(300.0)
    frames = []
    for n, thing in enumerate(("M1", "M2", "M3")):
        for quantity, scale in (("temperature", 0.5), ("load", -1.25)):
            values = (seconds * (7 + n) % 31 - 10) * scale
            frame = pd.DataFrame({"thing": thing, "quantity": quantity, "t": seconds, "v": values})
            if (thing, quantity) == ("M2", "load"):
                stray = pd.DataFrame({"thing": [thing], "quantity": quantity, "t": 160.0, "v": 9e9})
                frame = pd.concat([frame.iloc[:201], stray, frame.iloc[201:]])
            frames.append(frame.assign(order=np.arange(len(frame))))
    records = pd.concat(frames).sort_values("order", kind="stable").drop(columns="order")
    return records.assign(t=BASE_MS + records.t * 1000).reset_index(drop=True)


def test_kill_minus_nine_and_restart_loses_and_repeats_no_window(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = quantity_topic_settings(local_services, unique_name, 3)
    records = _machine_series()
    produce_records(settings, records)
    producer = Producer(settings.kafka.client_config())
    producer.produce(settings.topics.machine_data, key=b"M1.temperature", value=b"{not json")
    assert producer.flush(30) == 0
    checkpoint = tmp_path / "checkpoint"
    crash_and_finish(
        "quantity-stats", _env(settings), checkpoint, "--max-offsets-per-trigger", "300"
    )

    results = read_json(settings, settings.topics.machine_quantities)
    assert repeated_keys(results) == []  # in order: each window is written once
    section = settings.quantity_stats.model_copy(update=TIME_RULES)
    spec = quantity_spec(settings.model_copy(update={"quantity_stats": section}))
    assert_written_as_the_reference(results, records, spec)
    assert len(results) == 6 * 29  # windows up to [280 s, 290 s): the watermark is 297 s
    late = read_json(settings, settings.topics.late)
    assert [(r["thing"], r["quantity"], r["result"]) for r in late] == [("M2", "load", 9e9)]
    letters = read_json(settings, settings.topics.dead_letter)
    assert [(d["raw"], d["stage"]) for d in letters] == [("{not json", "quantity_stats")]
