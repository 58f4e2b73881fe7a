"""`statestream run <command>`: one command per command of the query registry, made from the
declarations (help, topics, options), no Spark needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from statestream.config.sections import TopicsSettings
from statestream.queries import REGISTRY
from statestream.queries.launch import RunOptions, commands
from tests.support import run_cli

TOPICS = TopicsSettings()


def test_every_registered_query_is_run_by_a_command() -> None:
    run_by = {q.name for definitions in commands().values() for q in definitions}
    assert run_by == {q.name for q in REGISTRY}
    listed = run_cli("run", "--help")
    assert listed.exit_code == 0
    for command in commands():
        assert command in listed.stdout


@pytest.mark.parametrize("command", sorted(commands()))
def test_a_commands_help_names_its_topics_and_options(command: str) -> None:
    done = run_cli("run", command, "--help", env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.stderr
    text = " ".join(done.stdout.split())
    for option in ("--available-now", "--max-offsets-per-trigger", "--from", "--checkpoint"):
        assert option in text
    for definition in commands()[command]:
        for field in (*definition.input_topics, *definition.output_topics):
            assert getattr(TOPICS, field) in text


def test_a_companion_query_keeps_its_checkpoint_beside_the_first(tmp_path: Path) -> None:
    options = RunOptions(available_now=True, checkpoint=tmp_path / "cells", pause_after_commit_s=3)
    first, companion = commands()["geo"]
    own = options.for_query(first, first=True)
    beside = options.for_query(companion, first=False)
    assert (own.checkpoint, own.pause_after_commit_s) == (tmp_path / "cells", 3)
    assert (beside.checkpoint, beside.pause_after_commit_s) == (tmp_path / "cells-bunching", 0)
    assert beside.available_now and beside.query_name == companion.name
