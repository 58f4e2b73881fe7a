"""`statestream join` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from statestream.cli import app
from statestream.codecs.bad_input import LATE_FIELDS

runner = CliRunner()


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _narrow(quantity: str, t: int, v: float) -> dict:
    return {"thing": "m1", "quantity": quantity, "phenomenonTime": t, "result": v}


def test_join_writes_pairs_late_file_and_summary(tmp_path: Path) -> None:
    records = [
        _narrow("speed", 0, 1.0),
        _narrow("speed", 2000, 2.0),
        _narrow("speed", 1000, 9.0),  # late: the speed series was at 2000 already
        _narrow("torque", 1000, 10.0),
        _narrow("torque", 1000, 10.0),  # duplicate
    ]
    source = _write(tmp_path / "in.jsonl", records)
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [
            "join",
            str(source),
            "-o",
            str(out),
            "--left",
            "speed",
            "--right",
            "torque",
            "--function",
            "product",
        ],
    )
    assert result.exit_code == 0, result.output
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["result"] for p in pairs] == [10.0, 20.0]
    assert pairs[0]["quantity"] == "product_speed_torque"
    late = [
        json.loads(line) for line in (tmp_path / "out.jsonl.late.jsonl").read_text().splitlines()
    ]
    assert list(late[0])[: len(LATE_FIELDS)] == list(LATE_FIELDS)  # the one late shape
    assert late[0]["ingested_at"] > 0
    assert [{k: v for k, v in r.items() if k != "ingested_at"} for r in late] == [
        {
            "stage": "join",
            "reason": "late",
            "source_topic": str(source),
            "partition": None,
            "offset": None,
            "thing": "m1",
            "quantity": "speed",
            "phenomenonTime": 1000.0,
            "result": 9.0,
            "watermark": 2000.0,
            "series": "left",
            "join": "product_speed_torque",
            "line": 3,
        }
    ]
    assert "2 pairs" in result.stderr and "late 1" in result.stderr
    assert "duplicates 1" in result.stderr


def test_no_flush_holds_back_pending_pairs(tmp_path: Path) -> None:
    # L at 0..4 s, R at 5..9 s: every L meets R@5 (5 pairs); R@6..9 wait for their previous L
    records = [_narrow("L", i * 1000, 1.0) for i in range(5)]
    records += [_narrow("R", i * 1000, 1.0) for i in range(5, 10)]
    source = _write(tmp_path / "in.jsonl", records)
    counts = {}
    for flag in ([], ["--no-flush"]):
        out = tmp_path / f"out{len(flag)}.jsonl"
        args = ["join", str(source), "-o", str(out), "--left", "L", "--right", "R", *flag]
        assert runner.invoke(app, args).exit_code == 0
        counts[bool(flag)] = len(out.read_text().splitlines())
    assert counts == {False: 9, True: 5}


def test_unreadable_input_is_one_line_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["join", str(tmp_path / "nope.jsonl"), "--left", "a", "--right", "b"]
    )
    assert result.exit_code != 0
    assert "cannot read" in str(result.exception)


def test_power_result_name_follows_the_component() -> None:
    from statestream.cli.join_cmd import default_result_quantity

    assert default_result_quantity("actSpeed_C12", "vaTorque_C12", "power") == "vaPower_C12"
