"""The vehicle-position record of `input.vehicle.positions` and its Kafka value, per envelope.

One HFP `VP` event of a vehicle (HSL's high-frequency positioning) becomes one `VehiclePosition`,
keyed `"<oper>/<veh>"` (numbers unpadded): the vehicle as HSL identifies it, by the HFP topic's
operator and vehicle number — not by the payload's `oper`, the trip's operator, which differs
when the trip is subcontracted (`ingest.hfp`). `settings.ingest.envelope` chooses its value, as
for machine records (`envelope`):

- `none` (default): a plain JSON object, `{"vehicle", "phenomenonTime", "mode", "route",
  "direction", "desi", "oper", "veh", "lat", "long", "speed", "heading", "delay", "odometer",
  "doorStatus", "occupancy", "nextStop", "journeyStart", "operatingDay"}`;
- `json`: the `Event` envelope in protobuf's JSON mapping, `{"eventTimeMs", "ingestionTimeMs",
  "vehiclePosition": {the same fields except "phenomenonTime"}}`;
- `protobuf`: the same `Event` as protobuf binary (member `vehicle_position = 4`).

`lat` and `long` are null exactly when the vehicle had no GPS fix; the other optional values are
null when the feed left them out.

    >>> position = VehiclePosition(22, 1234, 1764051330123, "bus", "1052", 1, "52",
    ...                            60.171, 24.9414, 8.3, 120, -5, 1234, 0, 0, "1130446",
    ...                            "08:15", "2026-11-25")
    >>> position.key
    '22/1234'
    >>> codec = vehicle_codec_for("protobuf")
    >>> codec.decode(codec.encode(position, 1764051330200)) == (position, 1764051330200)
    True
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import orjson

from statestream.ingest.envelope import Envelope, event_message_class


class VehiclePosition(NamedTuple):
    """One position of one vehicle at one time (the `input.vehicle.positions` record)."""

    oper: int  # the vehicle's operator: HFP topic operator_id (not the trip's, payload oper)
    veh: int  # vehicle number, unique within the operator: HFP topic vehicle_number
    event_time_ms: int  # epoch ms: HFP `tst`
    mode: str  # bus, tram, …
    route: str  # e.g. "1052"
    direction: int  # 1 or 2
    desi: str  # the route number shown to passengers, e.g. "52"
    lat: float | None  # WGS 84; None exactly when there is no GPS fix
    long: float | None
    speed: float | None  # m/s
    heading: int | None  # degrees, 0 = north
    delay: int | None  # s; negative = late
    odometer: int | None  # m
    door_status: int | None  # 0 closed, 1 open
    occupancy: int | None  # 0 room, 100 full
    next_stop: str | None
    journey_start: str  # HH:MM
    operating_day: str  # YYYY-MM-DD

    @property
    def key(self) -> str:
        """The Kafka key `oper/veh`: one vehicle stays in one partition, in order."""
        return f"{self.oper}/{self.veh}"

    @property
    def has_fix(self) -> bool:
        return self.lat is not None and self.long is not None


# (record attribute, JSON name) of the details, in the order of the message's fields
_DETAILS: tuple[tuple[str, str], ...] = (
    ("mode", "mode"),
    ("route", "route"),
    ("direction", "direction"),
    ("desi", "desi"),
    ("oper", "oper"),
    ("veh", "veh"),
    ("lat", "lat"),
    ("long", "long"),
    ("speed", "speed"),
    ("heading", "heading"),
    ("delay", "delay"),
    ("odometer", "odometer"),
    ("door_status", "doorStatus"),
    ("occupancy", "occupancy"),
    ("next_stop", "nextStop"),
    ("journey_start", "journeyStart"),
    ("operating_day", "operatingDay"),
)
OPTIONAL_DETAILS: frozenset[str] = frozenset(
    ("lat", "long", "speed", "heading", "delay", "odometer", "door_status", "occupancy")
)
"""Details declared proto3 `optional`: they may be absent (None), not just zero."""


class PositionNumbers(NamedTuple):
    """What the geo query needs of a position: its time, its vehicle and its numbers."""

    event_time_ms: int
    oper: int
    veh: int
    lat: float | None
    long: float | None
    speed: float | None
    delay: float | None

    @classmethod
    def of(cls, position: VehiclePosition) -> PositionNumbers:
        p = position
        return cls(p.event_time_ms, p.oper, p.veh, p.lat, p.long, p.speed, p.delay)


_FLOAT_OR_NONE = (float, type(None))
_NUMBER_OR_NONE = (float, int, type(None))


def _plain_numbers(details: Any, event_time_ms: Any) -> PositionNumbers | None:
    """The numbers of JSON details whose values all have their plain types (int time and
    vehicle, float coordinates, number speed and delay, or null), else None."""
    if type(details) is not dict:
        return None
    get = details.get
    oper, veh, lat, long = get("oper"), get("veh"), get("lat"), get("long")
    speed, delay = get("speed"), get("delay")
    if type(event_time_ms) is not int or type(oper) is not int or type(veh) is not int:
        return None
    if type(lat) not in _FLOAT_OR_NONE or type(long) not in _FLOAT_OR_NONE:
        return None
    if type(speed) not in _NUMBER_OR_NONE or type(delay) not in _NUMBER_OR_NONE:
        return None
    return PositionNumbers(event_time_ms, oper, veh, lat, long, speed, delay)


def _details(position: VehiclePosition) -> dict[str, Any]:
    """The details as JSON names and values, `vehicle` first."""
    details: dict[str, Any] = {"vehicle": position.key}
    for attribute, name in _DETAILS:
        details[name] = getattr(position, attribute)
    return details


def _position(details: dict[str, Any], event_time_ms: int) -> VehiclePosition:
    """The record of JSON details (either envelope); a missing optional value is None."""
    values: dict[str, Any] = {attribute: details.get(name) for attribute, name in _DETAILS}
    for attribute in ("lat", "long", "speed"):
        if values[attribute] is not None:
            values[attribute] = float(values[attribute])
    return VehiclePosition(event_time_ms=int(event_time_ms), **values)


class VehiclePositionCodec(ABC):
    """Encodes a position (with its ingestion time) as a Kafka value, and decodes it again."""

    name: Envelope

    @abstractmethod
    def encode(self, position: VehiclePosition, ingestion_ms: int) -> bytes:
        """The Kafka value of `position`."""

    @abstractmethod
    def decode(self, value: bytes) -> tuple[VehiclePosition, int | None]:
        """The position and its ingestion time (None when the encoding has none)."""

    def numbers(self, value: bytes) -> PositionNumbers | None:
        """The geo query's fast path: the numbers of a value that `decode` takes and whose
        fields all have their plain types, without building the record; None for any other
        value (then `decode` says what it is). This codec has no fast path: always None."""
        return None


class PlainVehicleJsonCodec(VehiclePositionCodec):
    """The position as one plain JSON object with `phenomenonTime` (epoch ms)."""

    name: Envelope = "none"

    def encode(self, position: VehiclePosition, ingestion_ms: int) -> bytes:
        details = _details(position)
        obj = {"vehicle": details.pop("vehicle"), "phenomenonTime": position.event_time_ms}
        obj.update(details)
        return orjson.dumps(obj)

    def decode(self, value: bytes) -> tuple[VehiclePosition, int | None]:
        obj = orjson.loads(value)
        return _position(obj, obj["phenomenonTime"]), None

    def numbers(self, value: bytes) -> PositionNumbers | None:
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return _plain_numbers(obj, obj.get("phenomenonTime")) if type(obj) is dict else None


class JsonVehicleEnvelopeCodec(VehiclePositionCodec):
    """The `Event` envelope with `vehiclePosition`, in protobuf's JSON mapping."""

    name: Envelope = "json"

    def encode(self, position: VehiclePosition, ingestion_ms: int) -> bytes:
        return orjson.dumps(
            {
                "eventTimeMs": position.event_time_ms,
                "ingestionTimeMs": ingestion_ms,
                "vehiclePosition": _details(position),
            }
        )

    def decode(self, value: bytes) -> tuple[VehiclePosition, int | None]:
        obj = orjson.loads(value)
        position = _position(obj["vehiclePosition"], obj["eventTimeMs"])
        return position, int(obj["ingestionTimeMs"])

    def numbers(self, value: bytes) -> PositionNumbers | None:
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        if type(obj) is not dict or type(obj.get("ingestionTimeMs")) is not int:
            return None
        return _plain_numbers(obj.get("vehiclePosition"), obj.get("eventTimeMs"))


class ProtobufVehicleEnvelopeCodec(VehiclePositionCodec):
    """The `Event` envelope with `vehicle_position`, as protobuf binary."""

    name: Envelope = "protobuf"

    def __init__(self) -> None:
        self._event = event_message_class()

    def encode(self, position: VehiclePosition, ingestion_ms: int) -> bytes:
        event = self._event(event_time_ms=position.event_time_ms, ingestion_time_ms=ingestion_ms)
        details = event.vehicle_position
        details.vehicle = position.key
        for attribute, _ in _DETAILS:
            value = getattr(position, attribute)
            if value is not None:
                setattr(details, attribute, value)
        if not details.ListFields():  # every value absent: still a vehicle_position event
            details.SetInParent()
        return event.SerializeToString()

    def decode(self, value: bytes) -> tuple[VehiclePosition, int | None]:
        event = self._event.FromString(value)
        details = event.vehicle_position
        values: dict[str, Any] = {}
        for attribute, _ in _DETAILS:
            present = details.HasField(attribute) if attribute in OPTIONAL_DETAILS else True
            values[attribute] = getattr(details, attribute) if present else None
        values["next_stop"] = values["next_stop"] or None  # proto3: "" stands for none
        position = VehiclePosition(event_time_ms=event.event_time_ms, **values)
        return position, event.ingestion_time_ms


def vehicle_codec_for(envelope: Envelope) -> VehiclePositionCodec:
    """The vehicle-position codec of an envelope setting: `none`, `json` or `protobuf`."""
    codecs: dict[str, type[VehiclePositionCodec]] = {
        "none": PlainVehicleJsonCodec,
        "json": JsonVehicleEnvelopeCodec,
        "protobuf": ProtobufVehicleEnvelopeCodec,
    }
    return codecs[envelope]()
