"""The fleet overview: one row per machine, kept from the live feed (pure: no I/O).

What a row says, from the data there is:

- **power**: the machine's power now, in kW: the sum over its components of the newest value of
  the power series the statistics job reads (`stats.power_quantity`, by default `vaPower_{c}`,
  the joined speed × torque on machine.out, in W). A component counts with its newest value by
  event time; a stopped machine keeps its last value and shows when that was (`power_time`).
- **duty cycle**: the highest over the machine's components of the duty cycle on display (the
  statistics job's sliding-window share of time at ≥ `stats.duty_threshold` of rated power, from
  analytics.machine.stats), so a machine is as busy as its busiest component.
- **alert**: whether a duty-cycle alert (analytics.machine.alerts) of one of its components is on
  display; both follow the display policy of `policy.py` (they expire with their window).

Rows change many times a second with 1,000 machines; `take_changes` hands over only the rows that
changed since the last call, so that the pages get throttled, small updates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from statestream.dashboard.messages import ALERT_KIND, DUTY_CYCLE_KIND, WindowResult


@dataclass
class _Machine:
    power_w: dict[str, tuple[float, float]] = field(default_factory=dict)  # component → (t, W)
    duty_cycle: dict[str, float] = field(default_factory=dict)  # component → share
    alerts: set[str] = field(default_factory=set)  # components with an alert on display


class FleetBoard:
    """The machines seen so far and their live figures.

    >>> board = FleetBoard("vaPower_{c}")
    >>> board.take_series([{"thing": "R1", "quantity": "vaPower_C11", "component": "C11",
    ...                     "t": [1000, 2000], "v": [4000.0, 5000.0]}])
    >>> [(row["thing"], row["power_kw"]) for row in board.take_changes()]
    [('R1', 5.0)]
    >>> board.take_changes()
    []
    """

    def __init__(self, power_quantity: str) -> None:
        before, _, after = power_quantity.partition("{c}")
        self._power = re.compile(re.escape(before) + "(.+)" + re.escape(after))
        self._machines: dict[str, _Machine] = {}
        self._changed: set[str] = set()

    def __len__(self) -> int:
        return len(self._machines)

    def take_series(self, series: Iterable[Mapping[str, Any]]) -> None:
        """Take the newest power value of each series message (see `series_messages`)."""
        for message in series:
            match = self._power.fullmatch(message.get("quantity", ""))
            times, values = message.get("t") or [], message.get("v") or []
            if match is None or not times:
                continue
            newest = max(range(len(times)), key=times.__getitem__)
            machine = self._machine(message["thing"])
            component = match.group(1)
            shown = machine.power_w.get(component)
            if shown is None or times[newest] >= shown[0]:
                machine.power_w[component] = (times[newest], values[newest])

    def take_results(self, shown: Iterable[WindowResult]) -> None:
        """Take the duty cycles and alerts the display policy has just put on display."""
        for result in shown:
            if result.kind == DUTY_CYCLE_KIND:
                self._machine(result.thing).duty_cycle[result.component] = result.values[
                    "duty_cycle"
                ]
            elif result.kind == ALERT_KIND:
                self._machine(result.thing).alerts.add(result.component)

    def take_expired(self, keys: Iterable[str]) -> None:
        """Drop the duty cycles and alerts whose display has expired (keys thing.component.kind)."""
        for key in keys:
            thing_component, _, kind = key.rpartition(".")
            thing, _, component = thing_component.rpartition(".")
            machine = self._machines.get(thing)
            if machine is None:
                continue
            if kind == DUTY_CYCLE_KIND and machine.duty_cycle.pop(component, None) is not None:
                self._changed.add(thing)
            elif kind == ALERT_KIND and component in machine.alerts:
                machine.alerts.discard(component)
                self._changed.add(thing)

    def rows(self) -> list[dict[str, Any]]:
        """Every machine's row, by name."""
        return [self.row(thing) for thing in sorted(self._machines)]

    def take_changes(self) -> list[dict[str, Any]]:
        """The rows that changed since the last call."""
        changed, self._changed = self._changed, set()
        return [self.row(thing) for thing in sorted(changed)]

    def row(self, thing: str) -> dict[str, Any]:
        machine = self._machines[thing]
        power = machine.power_w
        duty = machine.duty_cycle
        busiest = max(duty, key=duty.__getitem__) if duty else None
        return {
            "thing": thing,
            "power_kw": round(sum(w for _, w in power.values()) / 1000.0, 3) if power else None,
            "power_time": max(t for t, _ in power.values()) if power else None,
            "duty_cycle": duty[busiest] if busiest is not None else None,
            "duty_component": busiest,
            "alert": bool(machine.alerts),
            "alert_components": sorted(machine.alerts),
        }

    def _machine(self, thing: str) -> _Machine:
        self._changed.add(thing)
        return self._machines.setdefault(thing, _Machine())
