"""Kafka rows of vehicle positions → columns, whatever envelope the connector wrote.

The values are decoded with the one codec of the record (`statestream.ingest.vehicle_positions`,
envelope `settings.ingest.envelope`) and checked for what the Spark queries rely on: a route, a
direction, an event time, coordinates in range (or none: no fix), and a Kafka key that is the
position's vehicle (`oper/veh`: a vehicle stays in one partition, so its positions are read in
order). A value that fails gets the reason why, as `jobs.record_decoding` does for machine
records, and becomes a dead letter.

    >>> from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for
    >>> position = VehiclePosition(22, 1234, 1764051330123, "bus", "1052", 1, "52", 60.171,
    ...                            24.9414, 8.3, 120, -5, 1234, 0, 0, None, "08:15", "2026-11-25")
    >>> good = vehicle_codec_for("none").encode(position, 0)
    >>> rows = pd.DataFrame({"key": ["22/1234", "22/1", None], "value": [good, good, b"{"],
    ...                      "partition": [0, 1, 2], "offset": [7, 8, 9]})
    >>> positions, rejects = decode_vehicle_rows(rows, "none")
    >>> positions[["line", "vehicle", "t", "lat", "offset"]].values.tolist()
    [['1052/1', '22/1234', 1764051330123.0, 60.171, 7]]
    >>> for reason in rejects["reason"]:
    ...     print(reason)
    key '22/1' is not the position's vehicle 22/1234
    bad JSON: unexpected end of data: line 1 column 2 (char 1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import orjson
import pandas as pd

from statestream.ingest.envelope import Envelope
from statestream.ingest.vehicle_positions import VehiclePosition, vehicle_codec_for

POSITION_COLUMNS = (
    "line",
    "vehicle",
    "mode",
    "route",
    "direction",
    "t",
    "lat",
    "long",
    "speed",
    "delay",
)
LATEST_EVENT_TIME_MS = 10**13  # in 2286: a later "time" is a mistake that would stall its vehicle


def line_of(route: str, direction: int) -> str:
    """The key of a line, `route/direction`: the bunching query's group and its alerts' key."""
    return f"{route}/{direction}"


def decode_vehicle_rows(
    rows: pd.DataFrame, envelope: Envelope
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kafka rows (key, value, partition, offset) → (positions, rejects), in the rows' order.

    positions: line, vehicle, mode, route, direction, t (epoch ms), lat, long (NaN: no fix),
    speed, delay (NaN: missing), partition, offset; rejects: reason, raw (the Kafka value as it
    came), partition, offset — the shape `jobs.record_decoding` gives.
    """
    codec = vehicle_codec_for(envelope)
    decoded: list[dict[str, Any]] = []
    reasons: list[str | None] = []
    for key, value in zip(rows["key"], rows["value"], strict=True):
        position, reason = _checked(codec, key, value)
        reasons.append(reason)
        if position is not None:
            decoded.append(_columns(position))
    ok = np.array([reason is None for reason in reasons], dtype=bool)
    partition, offset = rows["partition"].to_numpy(), rows["offset"].to_numpy()
    positions = pd.DataFrame(decoded, columns=list(POSITION_COLUMNS)).assign(
        partition=partition[ok], offset=offset[ok]
    )
    rejects = pd.DataFrame(
        {
            "reason": np.asarray(reasons, dtype=object)[~ok],
            "raw": rows["value"].to_numpy(dtype=object)[~ok],
            "partition": partition[~ok],
            "offset": offset[~ok],
        }
    )
    return positions.astype({"t": "float64", "lat": "float64", "long": "float64"}), rejects


def _checked(
    codec, key: str | None, value: bytes | None
) -> tuple[VehiclePosition | None, str | None]:
    """The position of one Kafka row, or the reason it is none."""
    if value is None:
        return None, "empty message"
    try:
        position, _ = codec.decode(bytes(value))
    except orjson.JSONDecodeError as exc:
        return None, f"bad JSON: {exc}"
    except KeyError as exc:
        return None, f"missing {exc.args[0]}"
    except Exception as exc:  # whatever a codec raises, the value is unusable
        return None, f"not a vehicle position ({codec.name} envelope): {exc}"
    reason = _invalid(position)
    if reason is None and key != position.key:
        reason = f"key {key!r} is not the position's vehicle {position.key}"
    return (None, reason) if reason else (position, None)


def _invalid(position: VehiclePosition) -> str | None:
    """Why a decoded position cannot be used, or None."""
    if not isinstance(position.route, str) or not position.route:
        return "route is not a non-empty string"
    if type(position.direction) is not int:
        return "direction is not an integer"
    if type(position.oper) is not int or type(position.veh) is not int:
        return "oper and veh must be integers"
    if not 0 <= position.event_time_ms <= LATEST_EVENT_TIME_MS:
        return f"event time {position.event_time_ms} is not an epoch ms time"
    lat, long = position.lat, position.long
    if (lat is None) != (long is None):
        return "lat and long must both be given or both be null (no fix)"
    if lat is not None and not (_in_range(lat, 90.0) and _in_range(long, 180.0)):
        return f"coordinates out of range: lat {lat}, long {long}"
    return None


def _in_range(number: Any, limit: float) -> bool:
    return isinstance(number, float) and math.isfinite(number) and -limit <= number <= limit


def _columns(position: VehiclePosition) -> dict[str, Any]:
    return {
        "line": line_of(position.route, position.direction),
        "vehicle": position.key,
        "mode": str(position.mode or ""),
        "route": position.route,
        "direction": position.direction,
        "t": float(position.event_time_ms),
        "lat": math.nan if position.lat is None else position.lat,
        "long": math.nan if position.long is None else position.long,
        "speed": _number(position.speed),
        "delay": _number(position.delay),
    }


def _number(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan
