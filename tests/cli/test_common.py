"""The progress display the simulations share: it reports the count it is given, and a rate."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rich.progress import Progress, TaskID, TextColumn

from statestream.cli._common import rate_progress


def test_rate_progress_reports_the_count_and_a_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[dict[str, Any]] = []
    update = Progress.update

    def recorded(self: Progress, task_id: TaskID, **fields: Any) -> None:
        updates.append(fields)
        update(self, task_id, **fields)

    monkeypatch.setattr(Progress, "update", recorded)
    sent = TextColumn("{task.completed:,} rows")
    with rate_progress("test → nowhere", "rows", sent) as on_progress:
        time.sleep(0.01)
        on_progress(1_000)
    assert updates[-1]["completed"] == 1_000
    assert updates[-1]["rate"].endswith(" rows/s")
