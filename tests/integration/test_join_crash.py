"""kill -9 the streaming join in the middle of batches, restart it: every pair exactly once."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from statestream.config import Settings
from statestream.join import SpecTemplate
from tests.integration.crash_support import kill_after
from tests.integration.test_join_job import (
    _narrow_lines,
    _offline,
    _pair_key,
    _produce,
    _read_json,
    _topic_settings,
)

pytestmark = pytest.mark.integration

KILLS = 2


def _start_job(
    settings: Settings, checkpoint: Path, available_now: bool, *extra: str, per_trigger: int = 400
) -> subprocess.Popen:
    """The job in its own process group, `per_trigger` records a batch (small: many batches to
    be killed in); its stderr (Spark's logs) goes to a file beside the checkpoint, so a full
    pipe can never block it."""
    topics = settings.topics
    env = {
        **os.environ,
        "STATESTREAM_TOPICS__MACHINE_DATA": topics.machine_data,
        "STATESTREAM_TOPICS__MACHINE_OUT": topics.machine_out,
        "STATESTREAM_TOPICS__LATE": topics.late,
        "STATESTREAM_TOPICS__DEAD_LETTER": topics.dead_letter,
        "STATESTREAM_SPARK__SHUFFLE_PARTITIONS": "2",
    }
    args = [
        sys.executable,
        "-m",
        "statestream",
        "run",
        "join",
        "--checkpoint",
        str(checkpoint),
        "--max-offsets-per-trigger",
        str(per_trigger),
    ]
    if available_now:
        args.append("--available-now")
    with open(checkpoint.parent / "job.err", "a") as err:
        return subprocess.Popen(
            [*args, *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def test_kill_minus_nine_and_restart_loses_and_repeats_nothing(
    local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = _topic_settings(local_services, unique_name, 3)
    lines = _narrow_lines("time", 3000)
    _produce(settings, lines)
    checkpoint = tmp_path / "checkpoint"
    rng = random.Random(4)
    # after the Kafka transaction committed, before Spark recorded the batch as done: Spark
    # must run that batch again on restart, and the writer must recognise and skip it
    job = _start_job(settings, checkpoint, False, "--pause-after-commit", "30")
    assert kill_after(job, "committed batch ", 1, 0.5) == 1
    for _ in range(KILLS):  # somewhere inside a batch
        job = _start_job(settings, checkpoint, available_now=False)
        seen = kill_after(job, "batch ", rng.randint(1, 3), rng.uniform(0.0, 1.5))
        assert seen >= 1, "the job made no progress"
    # the rest in bigger batches (the batch in flight at the last kill is re-run as planned)
    final = _start_job(settings, checkpoint, available_now=True, per_trigger=4000)
    out, _ = final.communicate(timeout=600)
    err = (tmp_path / "job.err").read_text()
    assert final.returncode == 0, out + err[-3000:]
    expected, expected_late = _offline(lines, SpecTemplate())
    got = _read_json(settings, settings.topics.machine_out)
    assert len(got) == len({_pair_key(p) for p in got}), "a pair was written twice"
    assert {_pair_key(p) for p in got} == {_pair_key(p) for p in expected}
    assert len(_read_json(settings, settings.topics.late)) == expected_late
    assert "was committed before; skipped" in err  # the replay did happen, and was skipped


def test_a_new_checkpoint_is_a_new_exactly_once_lineage(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    """Batch ids restart at 0 with a new checkpoint; its batches must not count as committed."""
    from statestream.queries.join.job import JoinJobOptions, start_join_query

    settings = _topic_settings(local_services, unique_name, 2)
    lines = _narrow_lines("time", 30)
    _produce(settings, lines)
    for run in ("first", "second"):
        options = JoinJobOptions(
            available_now=True, query_name=unique_name, checkpoint=tmp_path / run
        )
        query = start_join_query(spark, settings, options)
        query.awaitTermination()
        assert query.exception() is None
    expected = {_pair_key(p) for p in _offline(lines, SpecTemplate())[0]}
    got = [_pair_key(p) for p in _read_json(settings, settings.topics.machine_out)]
    assert sorted(got) == sorted(list(expected) * 2)  # each run wrote the whole join once
