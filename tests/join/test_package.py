"""`statestream.join` loads its modules on first use of their names."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import statestream.join as join


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out))


def test_a_processor_unpickles_without_the_compiled_engine() -> None:
    # what Spark's driver does at a query's start: unpickle the join's processor, run `init`
    code = (
        "import pickle\n"
        "from statestream.jobs.join_processor import ComplementJoinProcessor, OutputTopics\n"
        "from statestream.join.spec import SpecTemplate\n"
        "topics = OutputTopics('out', 'late', 'dead', 'in')\n"
        "p = ComplementJoinProcessor([SpecTemplate('a', 'b', 'c')], topics)\n"
        "pickle.loads(pickle.dumps(p))"
    )
    loaded = _modules_after(code)
    assert "statestream.join.spec" in loaded
    assert not {"numba", "statestream.join.router", "statestream.join.things"} & loaded


def test_every_name_comes_from_its_module() -> None:
    for name in join.__all__:
        assert getattr(join, name) is not None
    from statestream.join import JoinRouter
    from statestream.join.router import JoinRouter as defined

    assert JoinRouter is defined


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        join.Nothing  # noqa: B018
