"""The engine's compiled loops: numba compiles each for the argument types it names when its
module is imported, and keeps the machine code on disk (`__pycache__`), so a process loads it
in milliseconds and no call waits for a compiler.

    >>> from statestream.join.table import _taken  # a kernel(I8, F8, F8, I8, I8): rows at index
    >>> thing, t, v, pos = _taken(np.array([4, 5]), np.array([0.5, 1.5]), np.zeros(2),
    ...                           np.arange(2), np.array([1, 1]))
    >>> thing.tolist(), t.tolist()
    ([5, 5], [1.5, 1.5])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit, types

I8 = types.int64[:]
F8 = types.float64[:]
B1 = types.boolean[:]
FLOAT = types.float64
INT = types.int64

__all__ = ["B1", "F8", "FLOAT", "I8", "INT", "kernel", "np", "step"]


def step(function: Callable) -> Callable:
    """A compiled helper of kernels, typed by its callers and compiled into them."""
    return njit(cache=True, nogil=True, inline="always")(function)


def kernel(*argument_types: types.Type) -> Callable[[Callable], Callable]:
    """Compile a function of numpy columns for these argument types (cached, GIL released)."""
    return njit(argument_types, cache=True, nogil=True)
