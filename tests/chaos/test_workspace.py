"""A chaos run's own topics: every topic a registered query reads or writes is the run's, so an
earlier run's results (on a shared topic) never count in this run's checks."""

from __future__ import annotations

from pathlib import Path

from statestream.chaos.workspace import run_workspace
from statestream.config import load_settings
from statestream.queries import REGISTRY


def test_every_topic_of_every_query_is_the_runs_own(tmp_path: Path) -> None:
    settings = load_settings(paths={"data_dir": tmp_path})
    run = "20260101000000_5"
    workspace = run_workspace(settings, run)
    named = {field for q in REGISTRY for field in (*q.input_topics, *q.output_topics)}
    for field in (*sorted(named), "commits"):
        assert getattr(workspace.settings.topics, field).startswith(f"chaos.{run}."), field
    assert workspace.settings.topics.machine_quantities in workspace.topics
    assert len(set(workspace.topics)) == len(workspace.topics)
    assert workspace.folder == tmp_path / "chaos" / run
    assert not workspace.folder.exists()  # names only; new_workspace creates them
