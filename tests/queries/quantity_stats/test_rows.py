"""One call of the quantity statistics processor on Kafka rows, state in memory: which series a
record belongs to and which records it refuses."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from statestream.exactly_once.packed_rows import records
from statestream.queries.quantity_stats import QuantityTopics
from statestream.queries.quantity_stats.processor import QuantityStatisticsProcessor
from statestream.queries.quantity_stats.spec import QuantitySpec
from statestream.testing import InMemoryMapState

SPEC = QuantitySpec(window_ms=1_000, out_of_orderness_ms=0, allowed_lateness_ms=0)


class _Handle:
    def getMapState(self, *_: Any) -> InMemoryMapState:
        return InMemoryMapState()


def _rows(*records_: tuple[str, str, float, float]) -> pd.DataFrame:
    keys = [f"{thing}.{quantity}" for thing, quantity, _, _ in records_]
    values = [
        json.dumps({"thing": th, "quantity": q, "phenomenonTime": t, "result": v}).encode()
        for th, q, t, v in records_
    ]
    count = len(values)
    return pd.DataFrame(
        {
            "bucket": np.zeros(count, dtype=np.int32),
            "key": keys,
            "value": values,
            "partition": np.zeros(count, dtype=np.int32),
            "offset": np.arange(count, dtype=np.int64),
        }
    )


def _sent(rows: pd.DataFrame) -> dict[str, list[dict]]:
    """The records one call writes, per kind."""
    processor = QuantityStatisticsProcessor(SPEC, QuantityTopics("q", "late", "dead", "in"))
    processor.init(_Handle())
    [frame] = list(processor.handleInputRows((0,), iter([rows]), None))
    sent: dict[str, list[dict]] = {}
    for row in frame[frame["kind"] != "figures"].itertuples(index=False):
        for _, _, value in records(row.topic, row.keys, row.values):
            sent.setdefault(row.kind, []).append(json.loads(value))
    return sent


def test_names_that_differ_after_a_nul_are_two_series() -> None:
    sent = _sent(_rows(("R1", "q", 0, 1.0), ("R1", "q\x00x", 100, 5.0), ("R1", "q", 1_000, 0.0)))
    windows = {(w["quantity"], w["window_start"]): w["count"] for w in sent["window"]}
    assert windows == {("q", 0): 1}  # q\x00x's window is still open: its watermark is 100
    state = _sent(_rows(("R1", "q\x00x", 0, 1.0), ("R1", "q\x00x", 1_000, 2.0)))["window"]
    assert [(w["quantity"], w["mean"]) for w in state] == [("q\x00x", 1.0)]


def test_a_time_beyond_epoch_ms_range_is_a_dead_letter_not_a_window() -> None:
    sent = _sent(_rows(("R1", "q", 0, 1.0), ("R1", "q", 1e300, 2.0), ("R1", "q", 1_000, 3.0)))
    [letter] = sent["malformed"]
    assert letter["reason"] == "phenomenonTime is out of range"
    assert letter["stage"] == "quantity_stats"
    assert [(w["window_start"], w["count"]) for w in sent["window"]] == [(0, 1)]


def test_a_late_record_has_its_stage_watermark_and_origin() -> None:
    sent = _sent(_rows(("R1", "q", 5_000, 1.0), ("R1", "q", 1_000, 2.0)))
    [late] = sent["late"]
    assert {k: late[k] for k in ("stage", "reason", "source_topic", "partition", "offset")} == {
        "stage": "quantity_stats",
        "reason": "late",
        "source_topic": "in",
        "partition": 0,
        "offset": 1,
    }
    assert (late["phenomenonTime"], late["result"], late["watermark"]) == (1_000, 2.0, 5_000)
    assert late["allowed_lateness_ms"] == 0
