"""The README's library example runs as written, gives pandas.merge_asof's rows on the bundled
sample, and is the as-of join `statestream bench small` times against a groupBy (issue #49:
"the README's batch example on the bundled sample")."""

from __future__ import annotations

import contextlib
import io
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from benchmarks.small_bench import asof_join_of, sample_records
from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

README = Path(__file__).parents[2] / "README.md"
SECTION = "## As a PySpark library"


def readme_example() -> str:
    """The first Python block of the README's library section."""
    text = README.read_text()
    section = text[text.index(SECTION) :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, f"no Python block under {SECTION!r} in README.md"
    return found.group(1)


def rows_of(frame: pd.DataFrame | DataFrame) -> list[tuple[Any, ...]]:
    """The rows of a pandas or Spark DataFrame as tuples, NaN and None alike, in one order."""
    if isinstance(frame, DataFrame):
        frame = frame.toPandas()
    frame = frame.astype(object).where(frame.notna(), None)
    return sorted(map(tuple, frame.itertuples(index=False)), key=repr)


def merge_asof_of_the_sample() -> pd.DataFrame:
    """Each actSpeed_C11 value with the vaTorque_C11 value in force at its time, per thing, by
    pandas alone from the sample file."""
    text = resources.files("statestream.data").joinpath("machine_events.jsonl").read_text()
    wide = pd.DataFrame([json.loads(line) for line in text.splitlines()])

    def series(quantity: str, name: str) -> pd.DataFrame:
        rows = wide[wide[quantity].notna()]
        side = pd.DataFrame(
            {
                "thing": rows["Thing"],
                "phenomenonTime": rows["Timestamp"].astype("int64"),
                name: rows[quantity].astype(float),
            }
        )
        return side.sort_values("phenomenonTime", kind="stable")

    speed, torque = series("actSpeed_C11", "speed"), series("vaTorque_C11", "torque")
    return pd.merge_asof(speed, torque, on="phenomenonTime", by="thing", direction="backward")


def test_the_readme_example_is_merge_asof_and_the_small_bench_query(spark: SparkSession) -> None:
    namespace: dict[str, Any] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_example(), str(README), "exec"), namespace)
    joined: DataFrame = namespace["joined"]
    assert "speed" in printed.getvalue() and "torque" in printed.getvalue()  # joined.show(3)

    assert joined.columns == ["thing", "phenomenonTime", "speed", "torque"]
    expected = merge_asof_of_the_sample()
    assert len(expected) > 1000 and expected["torque"].notna().sum() > 1000
    assert rows_of(joined) == rows_of(expected)
    assert rows_of(joined) == rows_of(asof_join_of(sample_records(spark)))
