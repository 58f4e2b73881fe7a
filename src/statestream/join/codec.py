"""Export and restore the engine's state as bytes, e.g. for Spark's state store.

The layout is a small float64 header per series followed by the raw column bytes; restoring in
the middle of a stream continues exactly (nothing lost, nothing repeated).

    >>> from statestream.join import ComplementJoin, JoinSpec
    >>> spec = JoinSpec("L", "R", "out")
    >>> restored = restore_state(spec, export_state(ComplementJoin(spec)))
    >>> restored.state_size
    0

Several named states (e.g. one per join of a thing) pack into one value:

    >>> unpack_states(pack_states({"vaPower_C11": b"ab", "vaPower_C12": b""}))
    {'vaPower_C11': b'ab', 'vaPower_C12': b''}
"""

from __future__ import annotations

import struct

import numpy as np

from statestream.errors import StatestreamError
from statestream.join.engine import ComplementJoin
from statestream.join.series import SeriesState
from statestream.join.spec import JoinSpec

FORMAT_VERSION = 1.0
_HEADER_FIELDS = 7  # version, head_prev_t, n_released, max_t, finished, tail length, pending length
_COLUMNS = (("t", np.float64), ("v", np.float64), ("pos", np.int64))


class StateFormatError(StatestreamError):
    """Stored join state could not be read (corrupt, or written by another format version)."""


def export_state(engine: ComplementJoin) -> bytes:
    """The engine's state (both series) as bytes."""
    return _export_series(engine.left) + _export_series(engine.right)


def restore_state(spec: JoinSpec, data: bytes) -> ComplementJoin:
    """A new engine for `spec` that continues exactly where the exported one stopped."""
    left, offset = _restore_series(data, 0)
    right, offset = _restore_series(data, offset)
    if offset != len(data):
        raise StateFormatError(f"join state has {len(data) - offset} unexpected trailing bytes")
    return ComplementJoin(spec, left, right)


def pack_states(states: dict[str, bytes]) -> bytes:
    """Named states as one bytes value: per state, name and data lengths, name, data."""
    parts = []
    for name, data in states.items():
        encoded = name.encode()
        parts += [_NAMED.pack(len(encoded), len(data)), encoded, data]
    return b"".join(parts)


def unpack_states(data: bytes) -> dict[str, bytes]:
    """The named states of `pack_states`."""
    states, offset = {}, 0
    while offset < len(data):
        if offset + _NAMED.size > len(data):
            raise StateFormatError("packed join states end inside a header")
        name_length, data_length = _NAMED.unpack_from(data, offset)
        start = offset + _NAMED.size + name_length
        end = start + data_length
        if end > len(data):
            raise StateFormatError("packed join states end inside a state")
        states[data[offset + _NAMED.size : start].decode()] = data[start:end]
        offset = end
    return states


_NAMED = struct.Struct("<HI")


def _export_series(series: SeriesState) -> bytes:
    header = np.array(
        [
            FORMAT_VERSION,
            series.head_prev_t,
            series.n_released,
            series.max_t,
            float(series.finished),
            len(series.t),
            len(series.pend_t),
        ],
        dtype=np.float64,
    )
    parts = [header.tobytes()]
    for prefix in ("", "pend_"):
        for name, dtype in _COLUMNS:
            parts.append(
                np.ascontiguousarray(getattr(series, prefix + name), dtype=dtype).tobytes()
            )
    return b"".join(parts)


def _restore_series(data: bytes, offset: int) -> tuple[SeriesState, int]:
    header_bytes = _HEADER_FIELDS * 8
    if len(data) < offset + header_bytes:
        raise StateFormatError("join state is truncated")
    header = np.frombuffer(data, dtype=np.float64, count=_HEADER_FIELDS, offset=offset)
    if header[0] != FORMAT_VERSION:
        raise StateFormatError(f"join state has format version {header[0]}, expected 1")
    offset += header_bytes
    series = SeriesState(
        head_prev_t=float(header[1]),
        n_released=int(header[2]),
        max_t=float(header[3]),
        finished=bool(header[4]),
    )
    for prefix, length in (("", int(header[5])), ("pend_", int(header[6]))):
        for name, dtype in _COLUMNS:
            size = length * 8
            if len(data) < offset + size:
                raise StateFormatError("join state is truncated")
            column = np.frombuffer(data, dtype=dtype, count=length, offset=offset).copy()
            setattr(series, prefix + name, column)
            offset += size
    return series, offset
