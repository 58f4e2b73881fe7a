"""`statestream join --spark`: the local join's pairs, from JSON lines or Parquet, to either."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from statestream.cli import app

pytestmark = pytest.mark.integration

runner = CliRunner()
OPTIONS = ["--left", "speed", "--right", "torque", "--function", "product"]


@pytest.fixture
def session(spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session, its runtime options as they were after the command (which sets its
    own on the session it finds)."""
    keys = ["spark.sql.shuffle.partitions"]
    before = {key: spark.conf.get(key) for key in keys}
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def records(tmp_path: Path) -> Path:
    rows = [("speed", t, float(t)) for t in (0, 2000, 1000, 4000)]  # 1000 is late
    rows += [("torque", t, 10.0) for t in (1000, 1000, 3000, 5000)]  # one duplicate
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(
            json.dumps({"thing": "m1", "quantity": q, "phenomenonTime": t, "result": v}) + "\n"
            for q, t, v in rows
        )
    )
    return path


def pair_keys(pairs: list[dict]) -> list[tuple]:
    return sorted(
        (p["thing"], p["phenomenonTime"], p["result"], p["left"]["phenomenonTime"]) for p in pairs
    )


def test_spark_join_gives_the_local_joins_pairs(session: SparkSession, tmp_path: Path) -> None:
    source = records(tmp_path)
    local = runner.invoke(app, ["join", str(source), "-o", str(tmp_path / "local.jsonl"), *OPTIONS])
    assert local.exit_code == 0, local.output
    expected = pair_keys(
        [json.loads(x) for x in (tmp_path / "local.jsonl").read_text().split("\n") if x]
    )

    out = tmp_path / "pairs.parquet"
    done = runner.invoke(app, ["join", "--spark", str(source), "-o", str(out), *OPTIONS])
    assert done.exit_code == 0, done.output
    assert "5 pairs · rejected: duplicate 1 · late 1" in done.output
    found = [row.asDict(recursive=True) for row in session.read.parquet(str(out)).collect()]
    assert pair_keys(found) == expected
    rejected = session.read.parquet(str(tmp_path / "pairs.rejected.parquet"))
    assert sorted(r.reason.split(":")[0] for r in rejected.collect()) == ["duplicate", "late"]


def test_spark_join_reads_parquet_in_time_order(session: SparkSession, tmp_path: Path) -> None:
    source = records(tmp_path)
    parquet = tmp_path / "records.parquet"
    session.read.json(str(source)).write.parquet(str(parquet))
    out = tmp_path / "pairs.jsonl"
    done = runner.invoke(app, ["join", "--spark", str(parquet), "-o", str(out), *OPTIONS])
    assert done.exit_code == 0, done.output
    assert "6 pairs · rejected: duplicate 1 ·" in done.output  # in time order nothing is late
    assert len([x for part in out.glob("part-*") for x in part.read_text().splitlines()]) == 6
    assert (tmp_path / "pairs.rejected.jsonl").is_dir()

    to_stdout = ["join", "--spark", str(parquet), "--late-output", str(tmp_path / "r"), *OPTIONS]
    done = runner.invoke(app, to_stdout)
    assert done.exit_code == 0, done.output
    pairs = [json.loads(x) for x in done.output.splitlines() if x.startswith('{"thing"')]
    assert len(pairs) == 6 and {p["quantity"] for p in pairs} == {"product_speed_torque"}


def test_spark_join_names_a_missing_input(session: SparkSession, tmp_path: Path) -> None:
    done = runner.invoke(app, ["join", "--spark", str(tmp_path / "nothing.jsonl"), *OPTIONS])
    assert done.exit_code != 0
    assert "nothing.jsonl: no such file" in str(done.exception)
