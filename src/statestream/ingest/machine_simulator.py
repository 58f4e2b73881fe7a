"""The simulator: real machine rows replayed as if the machines were sending them now.

Rows come from a JSON-lines file of wide rows (default: the bundled sample) and can be
re-ordered (`order="time"`), shifted to start now (`retime`), stamped with the time each is sent
(`follow_clock`: event time stays at now whatever the rate), repeated (`loops`, each pass shifted
by the file's time span so that no pass repeats another's times) and scaled up to more machines
(`things`: each real machine cloned into copies with a shifted, jittered series). Lines that are
not such rows are sent as they are: the connector is the one that rejects them.

    >>> plan = SimulationPlan(lines=[b'{"Thing": "R1", "Timestamp": 1554096380468, "a": 1.0}'],
    ...                       loops=2, things=2)
    >>> [json.loads(p)["Thing"] for p in plan.payloads()]
    ['R1', 'R1-1', 'R1', 'R1-1']
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from statestream.codecs.formats import WIDE_ROW_NON_QUANTITIES, MalformedRow, normalise_time_ms

LOOP_GAP_MS = 1000  # between the last row of one pass and the first of the next
CLONE_SHIFT_MAX_MS = 60_000  # a clone's series is shifted by up to this much
CLONE_JITTER = 0.02  # relative standard deviation of a clone's values


@dataclass
class _Row:
    raw: bytes
    obj: dict[str, Any] | None  # None: not a wide row with a numeric Timestamp; sent as it is
    time_ms: float = 0.0


@dataclass
class SimulationPlan:
    """What to replay and how; `payloads()` yields the MQTT payloads (or Kafka raw events)."""

    lines: Sequence[bytes]
    order: str = "file"  # or "time"
    retime: bool = False
    loops: int | None = 1  # None: forever
    things: int | None = None  # None: the machines of the file, as they are
    seed: int = 0
    follow_clock: bool = False  # each row's Timestamp: the wall-clock time it is taken
    _rows: list[_Row] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.order not in ("file", "time"):
            raise ValueError(f"order is 'file' or 'time', not {self.order!r}")
        self._rows = [_read_row(raw) for raw in self.lines]
        if self.order == "time":
            self._rows = _time_ordered(self._rows)

    @property
    def rows_per_pass(self) -> int:
        """Messages one pass over the file sends."""
        copies = self._copies()
        return sum(copies.get(r.obj["Thing"], 1) if r.obj else 1 for r in self._rows)

    def payloads(self) -> Iterator[bytes]:
        """Every payload of the simulation, in sending order (endless when `loops` is None)."""
        if self.follow_clock:
            yield from self._clock_payloads()
            return
        times = [r.time_ms for r in self._rows if r.obj is not None]
        first, span = (min(times), max(times) - min(times)) if times else (0.0, 0.0)
        offset = (time.time() * 1000 - first) if self.retime else 0.0
        clones = self._clones()
        passes = range(self.loops) if self.loops is not None else _forever()
        for number in passes:
            shift = round(offset + number * (span + LOOP_GAP_MS))
            for row in self._rows:
                if row.obj is None:
                    yield row.raw
                    continue
                machines = clones.get(row.obj["Thing"]) if clones else None
                if machines == []:
                    continue  # a machine beyond `things`
                if not shift and (machines is None or len(machines) == 1):
                    yield row.raw
                else:
                    yield from _row_payloads(row.obj, shift, machines)

    def _clock_payloads(self) -> Iterator[bytes]:
        """The payloads with event times that follow the clock: each row (and its clones) gets
        the epoch ms at which it is taken, one ms more than its machine's previous row at least.

        A plain `retime` shifts the file's times once: a replay sending rows faster than they were
        recorded then runs ahead of the clock (the sample at 20 rows/s gains ~25 s a second).
        """
        clones = self._clones()
        latest: dict[str, int] = {}
        passes = range(self.loops) if self.loops is not None else _forever()
        for _ in passes:
            for row in self._rows:
                if row.obj is None:
                    yield row.raw
                    continue
                machines = clones.get(row.obj["Thing"]) if clones else None
                if machines == []:
                    continue
                for clone in machines or [_Clone(row.obj["Thing"], 0, None)]:
                    stamp = max(time.time_ns() // 1_000_000, latest.get(clone.thing, 0) + 1)
                    latest[clone.thing] = stamp
                    now_clone = _Clone(clone.thing, 0, clone.jitter)
                    yield from _row_payloads({**row.obj, "Timestamp": stamp}, 0, [now_clone])

    def _machines(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self._rows:
            if row.obj is not None:
                seen.setdefault(row.obj["Thing"], None)
        return list(seen)

    def _copies(self) -> dict[str, int]:
        """How many machines each real machine stands for (0: left out)."""
        machines = self._machines()
        if self.things is None or not machines:
            return {}
        return {m: len(range(i, self.things, len(machines))) for i, m in enumerate(machines)}

    def _clones(self) -> dict[str, list[_Clone]]:
        """Per real machine, its machines: itself (no shift, no jitter) and its clones."""
        rng = random.Random(self.seed)
        clones: dict[str, list[_Clone]] = {}
        for machine, copies in self._copies().items():
            clones[machine] = [_Clone(machine, 0, None)] if copies else []
            for number in range(1, copies):
                jitter = random.Random(rng.getrandbits(64))
                shift = rng.randrange(CLONE_SHIFT_MAX_MS)
                clones[machine].append(_Clone(f"{machine}-{number}", shift, jitter))
        return clones


@dataclass
class _Clone:
    thing: str
    shift_ms: int
    jitter: random.Random | None  # None: the real machine's own values


def _row_payloads(obj: dict[str, Any], shift: int, clones: list[_Clone] | None) -> Iterator[bytes]:
    for clone in clones or [_Clone(obj["Thing"], 0, None)]:
        out = dict(obj)
        out["Thing"] = clone.thing
        out["Timestamp"] = obj["Timestamp"] + shift + clone.shift_ms
        if clone.jitter is not None:
            gauss = clone.jitter.gauss
            for name, value in obj.items():
                if name not in WIDE_ROW_NON_QUANTITIES and isinstance(value, float):
                    out[name] = value * (1.0 + gauss(0.0, CLONE_JITTER))
        yield json.dumps(out).encode()


def _read_row(raw: bytes) -> _Row:
    """The row of a line, when it is a wide row with a Thing and a Timestamp in epoch ms."""
    try:
        obj = json.loads(raw)
        if not isinstance(obj, dict) or not isinstance(obj.get("Thing"), str):
            return _Row(raw, None)
        time_ms, unit = normalise_time_ms(obj.get("Timestamp"))
    except (ValueError, MalformedRow, RecursionError):  # RecursionError: JSON nested too deep
        return _Row(raw, None)
    if unit != "ms" or not isinstance(obj["Timestamp"], int):
        return _Row(raw, None)
    return _Row(raw, obj, float(time_ms))


def _time_ordered(rows: list[_Row]) -> list[_Row]:
    """Rows by Timestamp (stable); a row without one stays after the row before it."""
    keys, last = [], float("-inf")
    for row in rows:
        last = row.time_ms if row.obj is not None else last
        keys.append(last)
    order = sorted(range(len(rows)), key=keys.__getitem__)
    return [rows[i] for i in order]


def _forever() -> Iterator[int]:
    number = 0
    while True:
        yield number
        number += 1


class Pacer:
    """Keeps a sender at `rate` messages per second on average since its start (None: no limit).

    >>> pacer = Pacer(None)
    >>> pacer.allowed(sent=10**9) > 0
    True
    """

    def __init__(self, rate: float | None) -> None:
        if rate is not None and rate <= 0:
            raise ValueError(f"the rate must be positive, not {rate}")
        self.rate = rate
        self.start = time.monotonic()

    def allowed(self, sent: int) -> int:
        """How many more may be sent now, `sent` having been sent."""
        if self.rate is None:
            return 1 << 62
        return int((time.monotonic() - self.start) * self.rate) + 1 - sent

    def wait_s(self, sent: int) -> float:
        """Seconds until the next one may be sent."""
        if self.rate is None:
            return 0.0
        return max(0.0, sent / self.rate - (time.monotonic() - self.start))

    def paced(self, payloads: Iterable[bytes]) -> Iterator[bytes]:
        """`payloads`, each one yielded only when it is due."""
        for sent, payload in enumerate(payloads):
            if self.allowed(sent) <= 0:
                time.sleep(self.wait_s(sent))
            yield payload
