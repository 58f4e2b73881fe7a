"""The cores a bench's tasks ran on, from the master and the local cluster's settings."""

from __future__ import annotations

import os

from benchmarks.spark_figures import per_core, task_cores

from statestream.config import load_settings


def test_a_local_master_has_its_threads() -> None:
    settings = load_settings()
    assert task_cores("local[3]", settings) == 3
    assert task_cores("local[*,4]", settings) == os.cpu_count()
    assert task_cores("local", settings) == 1


def test_the_local_cluster_has_its_workers_cores() -> None:
    settings = load_settings(services={"spark_workers": 2, "spark_worker_cores": 3})
    assert task_cores("spark://localhost:7077", settings) == 6
    assert task_cores("spark://elsewhere.plant:7077", settings) is None


def test_records_per_core() -> None:
    assert per_core({"records_per_s": 90_000, "task_cores": 2}) == 45_000
    assert per_core({"records_per_s": 90_000, "task_cores": None}) is None
