"""Python processes that keep the memory they free for their next batch (glibc's malloc).

A join call allocates its columns anew each batch: at 100,000 records over 10,000 things, some
8 MB of pairs, verdicts and state. glibc's malloc serves a block above its mmap threshold
(128 kB, raised as such blocks are freed, up to 32 MB) with a fresh mapping and unmaps it on
free, and hands the free top of its heap back above its trim threshold (128 kB): the next batch
then faults every page of its columns in again, a page fault per 4 kB. With the thresholds at
`MMAP_THRESHOLD` and `TRIM_THRESHOLD`, freed blocks stay in the heap and are reused.

The worker daemon (`python_daemon`) installs this before it forks Spark's Python workers, which
inherit malloc's settings; `statestream bench join` installs it in its own process, as the
engine runs in those workers. It applies with glibc only (musl and macOS have their own
allocators): elsewhere, or with `spark.patches` false, it is off and says so once.
"""

from __future__ import annotations

import ctypes
import platform

NAME = "freed_memory"
MMAP_THRESHOLD = 64 << 20  # blocks up to 64 MB come from the heap
TRIM_THRESHOLD = 256 << 20  # up to 256 MB of free heap stays in the process
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)


def applies() -> str | None:
    """None where this process's C library is glibc, else why the patch is off."""
    library, version = platform.libc_ver()
    if library != "glibc":
        return f"needs glibc's malloc, found {library or 'another C library'} {version}".rstrip()
    return None


def install() -> bool:
    """Set malloc's thresholds in this process (and the processes it forks from now on);
    False where the patch does not apply or glibc refuses a value."""
    if applies() is not None:
        return False
    libc = ctypes.CDLL("libc.so.6")
    return all(
        libc.mallopt(parameter, value) == 1
        for parameter, value in (
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        )
    )
