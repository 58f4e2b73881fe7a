"""The simulator's plan: order, retime, loops and cloned machines; bad lines sent as they are."""

from __future__ import annotations

import json
import math
import time
from itertools import pairwise

from statestream.ingest import SAMPLE_FILE, Pacer, SimulationPlan, file_lines

LINES = list(file_lines(SAMPLE_FILE))


def _rows(plan: SimulationPlan) -> list[dict]:
    return [json.loads(payload) for payload in plan.payloads()]


def test_one_pass_in_file_order_sends_the_file_unchanged() -> None:
    assert list(SimulationPlan(lines=LINES).payloads()) == LINES


def test_time_order_sorts_by_timestamp_and_keeps_every_row() -> None:
    rows = _rows(SimulationPlan(lines=LINES, order="time"))
    times = [row["Timestamp"] for row in rows]
    assert times == sorted(times)
    assert sorted(map(json.dumps, rows)) == sorted(json.dumps(json.loads(line)) for line in LINES)


def test_retime_starts_now_and_keeps_the_spacing() -> None:
    before = time.time() * 1000
    original = [json.loads(line)["Timestamp"] for line in LINES[:50]]
    shifted = [row["Timestamp"] for row in _rows(SimulationPlan(lines=LINES[:50], retime=True))]
    assert before - 1000 <= min(shifted) <= math.ceil(time.time() * 1000)  # now, in whole ms
    assert [b - a for a, b in pairwise(shifted)] == [b - a for a, b in pairwise(original)]


def test_each_loop_is_shifted_past_the_previous_one() -> None:
    plan = SimulationPlan(lines=LINES[:100], loops=3)
    rows = _rows(plan)
    assert len(rows) == 300 == plan.rows_per_pass * 3
    passes = [rows[i * 100 : (i + 1) * 100] for i in range(3)]
    assert min(r["Timestamp"] for r in passes[1]) > max(r["Timestamp"] for r in passes[0])
    assert [r["vaTorque_C11"] for r in passes[2] if "vaTorque_C11" in r] == [
        r["vaTorque_C11"] for r in passes[0] if "vaTorque_C11" in r
    ]


def test_things_clones_each_machine_with_shifted_jittered_series() -> None:
    plan = SimulationPlan(lines=LINES[::10], things=7)
    rows = _rows(plan)
    machines = sorted({row["Thing"] for row in rows})
    assert len(machines) == 7 and {"R0815", "H31415", "R27182"} <= set(machines)
    assert len(rows) == plan.rows_per_pass
    clone = [row for row in rows if row["Thing"] == "R0815-1"]
    real = [row for row in rows if row["Thing"] == "R0815"]
    assert len(clone) == len(real) > 0
    shifts = {c["Timestamp"] - r["Timestamp"] for c, r in zip(clone, real, strict=True)}
    assert len(shifts) == 1 and shifts != {0}  # one constant shift per clone
    assert any(c.get("vaLoad_C11") != r.get("vaLoad_C11") for c, r in zip(clone, real, strict=True))
    assert _rows(SimulationPlan(lines=LINES[::10], things=7)) == rows  # deterministic
    assert {r["Thing"] for r in _rows(SimulationPlan(lines=LINES[::10], things=2))} == {
        "R0815",
        json.loads(next(line for line in LINES if b"R0815" not in line))["Thing"],
    }


def test_lines_that_are_no_rows_are_sent_as_they_are() -> None:
    bad = [b"{not json", b'{"Thing": "R1"}', b'{"Thing": "R1", "Timestamp": 1554096380}']
    plan = SimulationPlan(lines=[LINES[0], *bad, LINES[1]], order="time", retime=True, loops=2)
    payloads = list(plan.payloads())
    assert [p for p in payloads if p in bad] == bad * 2


def test_the_pacer_holds_the_rate() -> None:
    pacer = Pacer(200.0)
    started = time.monotonic()
    assert len(list(pacer.paced(iter([b"x"] * 41)))) == 41
    assert time.monotonic() - started >= 0.19


def test_a_line_nested_too_deeply_for_json_is_sent_as_it_is() -> None:
    deep = b"[" * 5_000 + b"]" * 5_000
    plan = SimulationPlan(lines=[LINES[0], deep, LINES[1]], order="time", retime=True)
    payloads = list(plan.payloads())
    assert len(payloads) == 3 and deep in payloads
