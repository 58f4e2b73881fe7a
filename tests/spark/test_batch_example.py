"""examples/batch_parquet.py runs as written and prints the pairs of the sample in time order."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from statestream.codecs.formats import RecordColumns, parse_line
from statestream.join import JoinRouter, SpecTemplate

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "batch_parquet.py"


def pairs_in_time_order() -> int:
    """The sample's pairs with each series in time order (ties in file order), flushed."""
    columns = RecordColumns()
    text = resources.files("statestream.data").joinpath("machine_events.jsonl").read_bytes()
    for number, line in enumerate(text.splitlines(), 1):
        parse_line(line, number, columns)
    order = np.argsort(np.asarray(columns.times), kind="stable")
    router = JoinRouter(SpecTemplate().specs_for(sorted(set(columns.quantities))))
    pick = [np.asarray(c, dtype=object)[order] for c in (columns.things, columns.quantities)]
    t, v = (np.asarray(c, dtype=np.float64)[order] for c in (columns.times, columns.values))
    return router.process(*pick, t, v).pair_count + router.finish().pair_count


def test_the_batch_example_joins_the_sample(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"^(\d+) pairs written to (.+)$", done.stdout, re.MULTILINE)
    assert found, done.stdout
    assert int(found.group(1)) == pairs_in_time_order()
    assert Path(found.group(2)) == tmp_path / "pairs.parquet"
    assert (tmp_path / "observations.parquet").is_dir()
