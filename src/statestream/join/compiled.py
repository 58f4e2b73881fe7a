"""The engine's compiled loops: numba compiles each for the argument types it names when its
module is imported, and keeps the machine code on disk (`__pycache__`), so a process loads it
in milliseconds and no call waits for a compiler.

numba checks a kernel's cache against the file of its own module only, and a kernel holds the
code of the steps it calls, some in other modules (`things_pass`). So the caches of this
package are kept for one version of all its sources: when any changes (an edit, not an
install, which rewrites them all), `_drop_stale_caches` drops them before a kernel loads one.

    >>> from statestream.join.table import _taken  # a kernel(I8, F8, F8, I8, I8): rows at index
    >>> thing, t, v, pos = _taken(np.array([4, 5]), np.array([0.5, 1.5]), np.zeros(2),
    ...                           np.arange(2), np.array([1, 1]))
    >>> thing.tolist(), t.tolist()
    ([5, 5], [1.5, 1.5])
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba import njit, types

I8 = types.int64[:]
F8 = types.float64[:]

__all__ = ["F8", "I8", "kernel", "np", "step", "thing_step"]


def step(function: Callable) -> Callable:
    """A compiled helper of kernels, typed by its callers and compiled into them."""
    return njit(cache=True, nogil=True, inline="always")(function)


def kernel(*argument_types: types.Type) -> Callable[[Callable], Callable]:
    """Compile a function of numpy columns for these argument types (cached, GIL released)."""
    return njit(argument_types, cache=True, nogil=True)


def thing_step(function: Callable) -> Callable:
    """A compiled helper of a kernel that loops over things, without reference counting.

    numba counts references to every array a function takes or unpacks from a tuple, with
    atomic operations, and in a large function does not always prune the pairs: a kernel's
    loop over thousands of things would spend most of its time on them. A thing step is
    compiled without numba's runtime: it may read and write the arrays it is given (the kernel
    keeps them alive) but not create one. It is called, not inlined; the steps it calls are
    inlined into it, without reference counts either. So a loop over things is one thing step,
    not a call per thing: a call passes each array as seven arguments.
    """
    # _nrt is numba's own switch for its runtime, left out of the options its stub lists
    return njit(cache=True, nogil=True, _nrt=False)(function)  # type: ignore[call-overload]


def _drop_stale_caches() -> None:
    """Drop this package's numba caches if they were written for other versions of its
    sources (a fingerprint of them all is kept beside the caches)."""
    package = Path(__file__).parent
    sources = b"".join(path.read_bytes() for path in sorted(package.glob("*.py")))
    fingerprint = hashlib.sha256(sources).hexdigest()
    caches = package / "__pycache__"
    stamp = caches / "engine-sources.sha256"
    try:
        if stamp.is_file() and stamp.read_text() == fingerprint:
            return
        for cache in (*caches.glob("*.nbi"), *caches.glob("*.nbc")):
            cache.unlink(missing_ok=True)
        caches.mkdir(exist_ok=True)
        stamp.write_text(fingerprint)
    except OSError:  # read-only: numba caches elsewhere, and installed sources do not change
        pass


_drop_stale_caches()
