"""Kafka values of `input.vehicle.positions` → columns of positions, placed in H3 cells.

The first stage of `run geo` (a `mapInPandas` before the grouping by cell bucket) decodes each
value with the ingest codec of the envelope (`statestream.ingest.vehicle_positions`, the one
home of the format) and places each position with a fix in its cell. A value that is no
position, or whose coordinates are out of range, gets the reason (it becomes a dead letter).

    >>> from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
    >>> good = VehiclePosition(22, 1234, 1764051330123, "bus", "1052", 1, "52", 60.1699, 24.9384,
    ...                        8.3, 120, -5, 1234, 0, 0, None, "08:15", "2026-11-25")
    >>> value = vehicle_codec_for("none").encode(good, 0)
    >>> columns = decode_positions([value, b"{", value.replace(b"60.1699", b"95.0")], "none", 8)
    >>> int(columns["t"][0]), vehicle_key(int(columns["vehicle"][0])), columns["reason"][0] is None
    (1764051330123, '22/1234', True)
    >>> columns["reason"][1][:39], columns["reason"][2]
    ('not a vehicle position: JSONDecodeError', 'coordinates out of range: lat 95.0, long 24.9384')
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from statestream.geo import assign_cells
from statestream.ingest.envelope import Envelope
from statestream.ingest.vehicle_positions import PositionNumbers, vehicle_codec_for
from statestream.jobs.vehicle_decoding import LATEST_EVENT_TIME_MS

_VEHICLE_BITS = 32


def vehicle_id(oper: int, veh: int) -> int:
    """One integer for a vehicle (`oper/veh`): the operator in the high bits."""
    return (oper << _VEHICLE_BITS) | veh


def vehicle_key(vehicle: int) -> str:
    """The Kafka key `oper/veh` of a `vehicle_id`."""
    return f"{vehicle >> _VEHICLE_BITS}/{vehicle & ((1 << _VEHICLE_BITS) - 1)}"


def decode_positions(
    values: Sequence[bytes | None], envelope: Envelope, resolution: int
) -> dict[str, np.ndarray]:
    """Columns t, vehicle, lat, long, speed, delay, cell (0: no fix) and reason (None: a
    position) of Kafka values; a refused value's other columns are 0 or NaN."""
    codec = vehicle_codec_for(envelope)
    count = len(values)
    t = np.zeros(count, dtype=np.int64)
    vehicle = np.zeros(count, dtype=np.int64)
    floats = {name: np.full(count, np.nan) for name in ("lat", "long", "speed", "delay")}
    reason = np.full(count, None, dtype=object)
    lat, long, speed, delay = floats.values()
    for i, value in enumerate(values):
        position, numbers, why = _decoded(codec, value)
        if position is None:
            reason[i] = why
            continue
        t[i] = position.event_time_ms
        vehicle[i] = (position.oper << _VEHICLE_BITS) | position.veh
        lat[i], long[i], speed[i], delay[i] = numbers
    cell = assign_cells(floats["lat"], floats["long"], resolution)
    return {"t": t, "vehicle": vehicle, **floats, "cell": cell, "reason": reason}


Decoded = tuple[PositionNumbers | None, tuple[float, ...], str | None]
_NONE: tuple[float, ...] = ()


def _decoded(codec, value: bytes | None) -> Decoded:
    """The numbers of a value's position and its lat, long, speed, delay (NaN: missing), or the
    reason it is none. The codec's fast path reads a well-typed value; `decode` any other."""
    if value is None:
        return None, _NONE, "empty message"
    try:
        position = codec.numbers(value) or PositionNumbers.of(codec.decode(bytes(value))[0])
        numbers = _numbers(position)
        if not (isinstance(position.oper, int) and isinstance(position.veh, int)):
            raise TypeError("oper and veh must be integers")
        if not 0 <= position.oper < 2**31 or not 0 <= position.veh < 2**_VEHICLE_BITS:
            raise ValueError(f"oper {position.oper} or veh {position.veh} out of range")
        event_time = int(position.event_time_ms)
    except RecursionError:
        return None, _NONE, "not a vehicle position: nested too deeply"
    except Exception as exc:  # any decoder's error: the value is refused, the query goes on
        return None, _NONE, f"not a vehicle position: {type(exc).__name__}: {exc}"
    if not 0 <= event_time <= LATEST_EVENT_TIME_MS:
        return None, _NONE, f"event time {event_time} is not an epoch ms time"
    lat, long = numbers[0], numbers[1]
    if math.isnan(lat) != math.isnan(long):
        return (
            None,
            _NONE,
            f"lat {_text(lat)} and long {_text(long)}: both or neither must be given",
        )
    if not math.isnan(lat) and not (abs(lat) <= 90.0 and abs(long) <= 180.0):
        return None, _NONE, f"coordinates out of range: lat {lat}, long {long}"
    return position, numbers, None


def _numbers(position: PositionNumbers) -> tuple[float, ...]:
    """lat, long, speed, delay as floats (NaN: missing, or a number that is not finite)."""
    numbers = []
    for value in (position.lat, position.long, position.speed, position.delay):
        number = math.nan if value is None else float(value)
        numbers.append(number if math.isfinite(number) else math.nan)
    return tuple(numbers)


def _text(number: float) -> str:
    return "null" if math.isnan(number) else str(number)
