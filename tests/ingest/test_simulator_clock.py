"""The simulator's `follow_clock`: a paced replay of the sample keeps event time at now (what
`statestream demo` does by default), where a plain `retime` runs ahead of the clock."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from itertools import islice

from statestream.ingest import SAMPLE_FILE, Pacer, SimulationPlan, file_lines

LINES = list(file_lines(SAMPLE_FILE))
RATE = 200.0  # rows/s: ten times the demo's, so the test takes a second
ROWS = 200
FEW_SECONDS_MS = 3000


def _paced(plan: SimulationPlan) -> list[tuple[dict, float]]:
    """The first ROWS rows as a simulation at RATE sends them, each with the wall-clock ms at
    which it was handed over."""
    paced = Pacer(RATE).paced(plan.payloads())
    return [(json.loads(payload), time.time() * 1000) for payload in islice(paced, ROWS)]


def test_following_the_clock_keeps_event_time_within_a_few_seconds_of_now() -> None:
    plan = SimulationPlan(lines=LINES, order="time", follow_clock=True, loops=None, things=6)
    sent = _paced(plan)
    for row, now in sent:
        assert abs(row["Timestamp"] - now) <= FEW_SECONDS_MS
    per_machine = defaultdict(list)
    for row, _ in sent:
        per_machine[row["Thing"]].append(row["Timestamp"])
    assert {"R0815", "R0815-1"} <= set(per_machine)  # a clone follows the clock too
    for times in per_machine.values():
        assert times == sorted(set(times))  # strictly increasing: no two rows at one time


def test_a_plain_retime_runs_ahead_of_the_clock_at_the_same_rate() -> None:
    plan = SimulationPlan(lines=LINES, order="time", retime=True, loops=None, things=6)
    row, now = _paced(plan)[-1]
    assert row["Timestamp"] - now > 10 * FEW_SECONDS_MS  # why the demo follows the clock


def test_following_the_clock_sends_every_row_and_the_lines_that_are_not_rows() -> None:
    lines = [b"not a row", *LINES[:20]]
    rows = list(SimulationPlan(lines=lines, follow_clock=True).payloads())
    assert rows[0] == b"not a row"
    assert [json.loads(r)["Thing"] for r in rows[1:]] == [
        json.loads(x)["Thing"] for x in LINES[:20]
    ]
