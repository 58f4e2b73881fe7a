"""The offline join on the real sample data, against the spec's definition."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

import pytest

from statestream.codecs.formats import RecordColumns, parse_line
from statestream.join import JoinSpec
from statestream.offline_join import join_lines
from statestream.testing import brute_force_join, classify, count_verdicts

SAMPLE = (
    Path(__file__).resolve().parents[1] / "src" / "statestream" / "data" / "machine_events.jsonl"
)
LEFT, RIGHT = "actSpeed_C11", "vaTorque_C11"


def _sample_lines(order: str) -> list[bytes]:
    lines = SAMPLE.read_bytes().splitlines()
    if order == "time":
        rows = [(json.loads(raw), raw) for raw in lines]
        lines = [raw for _, raw in sorted(rows, key=lambda r: (r[0]["Thing"], r[0]["Timestamp"]))]
    return lines


def _expected(lines: list[bytes], spec: JoinSpec) -> tuple[set, dict[str, int]]:
    """Pairs as (thing, left t, left v, right t, right v) and verdict counts, by brute force."""
    columns = RecordColumns()
    for number, raw in enumerate(lines, 1):
        parse_line(raw, number, columns)
    per_thing: dict[str, list] = defaultdict(list)
    for thing, quantity, t, v in zip(
        columns.things, columns.quantities, columns.times, columns.values, strict=True
    ):
        if quantity in (spec.left, spec.right):
            per_thing[thing].append(("left" if quantity == spec.left else "right", t, v))
    pairs, counts = set(), defaultdict(int)
    for thing, records in per_thing.items():
        for li, ri in brute_force_join(spec, records, finish=False):
            pairs.add((thing, *records[li][1:], *records[ri][1:]))
        for kind, n in count_verdicts(classify(spec, records).values()).items():
            counts[kind] += n
    return pairs, dict(counts)


def _run(lines: list[bytes], spec: JoinSpec, flush: bool = False):
    out, late = io.StringIO(), io.StringIO()
    summary = join_lines((raw + b"\n" for raw in lines), [spec], out, lambda: late, flush=flush)
    pairs = []
    for text in out.getvalue().splitlines():
        p = json.loads(text)
        left, right = p["left"], p["right"]
        pairs.append(
            (
                p["thing"],
                left["phenomenonTime"],
                left["result"],
                right["phenomenonTime"],
                right["result"],
            )
        )
    return summary, pairs, late.getvalue().splitlines()


@pytest.mark.parametrize("order", ["time", "file"])
@pytest.mark.parametrize("disorder", [0.0, 120.0])
def test_real_sample_equals_the_definition(order: str, disorder: float) -> None:
    spec = JoinSpec(LEFT, RIGHT, "vaPower_C11", disorder=disorder)
    lines = _sample_lines(order)
    expected_pairs, counts = _expected(lines, spec)
    summary, pairs, late_lines = _run(lines, spec)
    assert len(pairs) == len(set(pairs)), "a pair was written twice"
    assert set(pairs) == expected_pairs
    assert summary.late == counts["late"] == len(late_lines)
    assert summary.duplicates == counts["duplicate"]
    assert summary.records == 19_825 and summary.lines == 5_000
    if order == "time":
        assert summary.late == 0 and len(pairs) > 1_000
    else:
        assert summary.late > 0  # the file jumps back by 10 to 60 s every few records


def test_pair_records_follow_the_output_format() -> None:
    spec = JoinSpec(LEFT, RIGHT, "vaPower_C11")
    lines = _sample_lines("time")[:200]
    out = io.StringIO()
    join_lines((raw + b"\n" for raw in lines), [spec], out, io.StringIO)
    first = json.loads(out.getvalue().splitlines()[0])
    assert set(first) == {"thing", "quantity", "phenomenonTime", "result", "left", "right"}
    assert first["quantity"] == "vaPower_C11"
    left, right = first["left"], first["right"]
    assert (left["quantity"], right["quantity"]) == (LEFT, RIGHT)
    assert first["phenomenonTime"] == (left["phenomenonTime"] + right["phenomenonTime"]) / 2
    power = 2 * 3.141592653589793 / 60 * left["result"] * right["result"]
    assert first["result"] == pytest.approx(power)


def test_malformed_lines_are_reported_and_the_rest_is_joined() -> None:
    good = _sample_lines("time")[:300]
    bad = [
        b'{"Thing": "R0815", "Timestamp": 1, "actSpeed_C11": ',  # bad JSON
        b'{"Timestamp": 1554096380468, "actSpeed_C11": 1.0}',  # missing Thing
        b'{"Thing": "R0815", "Timestamp": "soon", "actSpeed_C11": 1.0}',  # time not a number
        b'{"thing": "R0815", "quantity": "vaTorque_C11", "phenomenonTime": 5, "result": "x"}',
        b'{"thing": "R0815", "quantity": "vaTorque_C11", "result": 1.0}',  # no time
        b"[1, 2]",
    ]
    lines = good[:100] + bad + good[100:]
    spec = JoinSpec(LEFT, RIGHT, "vaPower_C11")
    summary, pairs, _ = _run(lines, spec)
    reported = dict(summary.malformed)
    assert sorted(reported) == list(range(101, 107))
    assert "bad JSON" in reported[101]
    assert "missing Thing" in reported[102]
    assert "Timestamp is not a number" in reported[103]
    assert "result of vaTorque_C11 is not a number" in reported[104]
    assert "missing phenomenonTime" in reported[105]
    assert "not a JSON object" in reported[106]
    assert set(pairs) == _expected(good, spec)[0]
