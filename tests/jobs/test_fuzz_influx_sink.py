"""Fuzzing the InfluxDB sink's record → point conversion: every record of the four streams
becomes points or one dead letter with its reason; nothing raises, no point InfluxDB must refuse."""

from __future__ import annotations

import json
import re

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from statestream.config import load_settings
from statestream.jobs.influx_sink_job import InfluxPartitionWriter, _dead_letter, sink_streams
from statestream.sinks.line_protocol import BadRecord, PointBuilder, precision_for
from tests.fuzz_inputs import FUZZ, check_dead_letter, hostile

RECORD = {"thing": "R1", "quantity": "vaTorque_C11", "phenomenonTime": 5000, "result": 1.5}
PAIR = {
    **RECORD,
    "quantity": "vaPower_C11",
    "left": {"phenomenonTime": 4000, "result": 2.0},
    "right": {"phenomenonTime": 6000, "result": 3.0},
}
DUTY = {
    "thing": "R1",
    "component": "C11",
    "kind": "duty_cycle",
    "window_start": 0,
    "window_end": 600000,
    "duty_cycle": 0.45,
}
LEVELS = {**DUTY, "kind": "levels", "level_seconds": {"0-20": 30, "80-100": 30.0}}
TEMPLATES = {
    "machine_data": [RECORD],
    "machine_out": [PAIR],
    "machine_stats": [DUTY, LEVELS],
    "machine_alerts": [{**DUTY, "limit": 0.4}],
    "vehicle_cells": [
        {
            "cell": "881126d339fffff",
            "resolution": 8,
            "window_start": 0,
            "window_end": 60000,
            "vehicles": 2,
            "positions": 9,
            "mean_speed": None,
            "mean_delay": -4.5,
            "final": True,
        }
    ],
}
SETTINGS = load_settings()
STREAMS = sink_streams(SETTINGS)  # topic → measurement
NOT_A_NUMBER = re.compile(r"=-?(nan|inf)\b")


@st.composite
def sink_rows(draw: st.DrawFn) -> tuple[list[str], list[bytes | None]]:
    """(topics, values): the sink's input rows, values as the bytes Spark reads from Kafka."""
    topics, values = [], []
    for _ in range(draw(st.integers(1, 10))):
        topic = draw(st.sampled_from(sorted(STREAMS)))
        template = draw(st.sampled_from(TEMPLATES[STREAMS[topic]]))
        value = draw(hostile(template) | st.none())
        topics.append(topic)
        values.append(value)
    return topics, values


@FUZZ
@given(sink_rows())
def test_every_record_becomes_points_or_one_dead_letter(rows: tuple[list, list]) -> None:
    topics, values = rows
    points, origins, bad = InfluxPartitionWriter(SETTINGS, None)._points(topics, values)
    bad_rows = [row for row, _ in bad]
    assert len(set(bad_rows)) == len(bad_rows)
    accepted = [row for row in range(len(values)) if row not in set(bad_rows)]
    assert len(accepted) + len(bad) == len(values)
    assert set(origins) <= set(accepted)  # a later record of the same point wins
    builder = PointBuilder()
    for row in accepted:
        assert builder.points(STREAMS[topics[row]], values[row])  # at least one point
    for row, reason in bad:
        try:
            builder.points(STREAMS[topics[row]], values[row])
            raise AssertionError(f"row {row} was dead-lettered but converts")
        except BadRecord as exc:
            assert str(exc) == reason
    precision = precision_for(points)
    for point in points:
        line = point.line(precision)
        assert "\n" not in line and not NOT_A_NUMBER.search(point.fields), line

    frame = pd.DataFrame(
        {"topic": topics, "partition": 0, "offset": range(len(values)), "value": values}
    )
    for row, reason in bad:
        letter = json.loads(_dead_letter(frame, row, reason))
        check_dead_letter(letter, "sink_influx")
        assert (letter["source_topic"], letter["offset"]) == (topics[row], row)
        assert letter["reason"] == reason
