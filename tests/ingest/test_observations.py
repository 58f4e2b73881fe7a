"""Machine rows become one observation per quantity; bad input is named, never skipped."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from statestream.errors import InputError
from statestream.ingest import (
    SAMPLE_FILE,
    Observation,
    observations_from_row,
    read_machine_rows,
    read_observations,
)


def test_a_wide_row_gives_one_observation_per_quantity() -> None:
    row = {"Thing": "R0815", "Timestamp": 1554096380468, "vaLoad_C11": 1.5, "aaAcc_C11": 2}
    row["id"] = "c352b79d"
    observations = observations_from_row(row)
    assert observations == [
        Observation("R0815", "vaLoad_C11", 1554096380468, 1.5),
        Observation("R0815", "aaAcc_C11", 1554096380468, 2.0),
    ]
    assert observations[0].key == "R0815.vaLoad_C11"
    assert json.loads(observations[0].to_json()) == {
        "thing": "R0815",
        "quantity": "vaLoad_C11",
        "phenomenonTime": 1554096380468,
        "result": 1.5,
    }


def test_the_sample_gives_19825_observations_of_three_things() -> None:
    rows = list(read_machine_rows(SAMPLE_FILE))
    observations = list(read_observations(SAMPLE_FILE))
    assert len(rows) == 5000
    assert len(observations) == 19825
    assert set(Counter(o.thing for o in observations)) == {"R0815", "H31415", "R27182"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"Timestamp": 1, "a": 1.0}, "without a Thing"),
        ({"Thing": "R1", "Timestamp": "yesterday", "a": 1.0}, "integer Timestamp"),
        ({"Thing": "R1", "Timestamp": 1, "a": "high"}, "a of R1 at 1 is not a number"),
        ({"Thing": "R1", "Timestamp": 1, "a": None}, "not a number"),
    ],
)
def test_bad_rows_raise_input_error(row: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        observations_from_row(row)


def test_bad_lines_are_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"Thing": "R1", "Timestamp": 1, "a": 1}\n\n[1, 2]\n')
    with pytest.raises(InputError, match=r"rows.jsonl, line 3: not a JSON object"):
        list(read_machine_rows(path))
    path.write_text('{"Thing": "R1", "Timestamp": 1, "a": 1}\n{"Thing": \n')
    with pytest.raises(InputError, match=r"line 2: not JSON"):
        list(read_machine_rows(path))
    with pytest.raises(InputError, match="cannot read"):
        list(read_machine_rows(tmp_path / "missing.jsonl"))
