"""The freed_memory patch: a process keeps the memory a batch frees, and reuses it for the next.

Each probe runs in a fresh Python, as malloc's settings are the whole process's: batches of
eighty 1 MB columns, allocated, written and freed, as a join call's are. With glibc's own
thresholds the free top of the heap goes back to the kernel after each batch and the next one
faults its pages in again; with the patch the later batches find them.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from statestream.config import load_settings
from statestream.spark.patches import freed_memory, spark_conf

PROBE = """
import json, resource, sys
import numpy as np
from statestream.spark.patches import freed_memory
installed = freed_memory.install() if sys.argv[1] == "patched" else None
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    columns = [np.ones(1 << 17) for _ in range(80)]  # 80 columns of 1 MB, written
    del columns
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"installed": installed, "faults": faults}))
"""


def _probe(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the patch needs glibc's malloc")
def test_later_batches_reuse_the_memory_the_first_freed() -> None:
    patched, plain = _probe("patched"), _probe("plain")
    assert patched["installed"] is True
    pages = 80 * (1 << 20) // 4096
    assert all(f > pages // 2 for f in plain["faults"][1:])  # each batch faults its pages in
    assert patched["faults"][0] > pages // 2  # the first batch takes its memory from the kernel
    assert all(f < pages // 20 for f in patched["faults"][1:])  # the later ones reuse it


def test_off_with_another_c_library_with_one_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert freed_memory.install() is False
    for _ in range(2):
        spark_conf(load_settings())
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "statestream: patch freed_memory off: needs glibc's malloc, found another C library"
    ]
