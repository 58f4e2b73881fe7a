"""`bench ingest`'s parts that need no services: the connector's options and sessions for a
count of instances, and the CPU of a connector with its instances."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks.ingest_bench import _client_ids, _connector_args, _cpu_seconds, _tree_cpu_seconds

BUSY = """
import time
start = time.process_time()
while time.process_time() - start < 0.5:
    pass
time.sleep(30)
"""


def test_one_connector_or_a_group_of_them() -> None:
    assert _connector_args(1) == ["--report-every", "0"]
    assert _connector_args(3) == ["--report-every", "0", "--instances", "3"]
    assert _client_ids("bench_x", 1) == ["bench_x"]
    assert _client_ids("bench_x", 2) == ["bench_x-1", "bench_x-2"]


def test_the_cpu_of_a_process_counts_its_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        deadline = time.monotonic() + 120  # a loaded machine
        while _cpu_seconds(child.pid) < 0.2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        own = _cpu_seconds(os.getpid())
        assert _tree_cpu_seconds(os.getpid()) >= own + 0.2
        assert _tree_cpu_seconds(None) == 0.0
    finally:
        child.kill()
        child.wait()
