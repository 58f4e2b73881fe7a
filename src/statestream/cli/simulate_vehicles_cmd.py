"""`statestream simulate vehicles`: simulated HSL buses and trams publishing HFP v2 positions.

`simulate` is a group: `simulate machines` (the default: `statestream simulate [FILE] …` is
`statestream simulate machines [FILE] …`) and `simulate vehicles`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import TextColumn
from typer.core import TyperGroup

from statestream.cli._common import console, rate_progress, settings_from
from statestream.cli.simulate_cmd import SimulationTarget, delivery_summary, simulate
from statestream.errors import InputError
from statestream.ingest.machine_delivery import SimulationResult
from statestream.ingest.vehicle_delivery import (
    LIVE,
    Rate,
    VehicleSimulation,
    run_vehicle_simulation,
)

if TYPE_CHECKING:
    from typer import _click  # the Click that typer (≥ 0.26) vendors: its groups' contexts


def simulate_vehicles(
    ctx: typer.Context,
    vehicles: Annotated[
        int, typer.Option("--vehicles", min=1, help="Buses and trams, spread over 36 routes.")
    ] = 50,
    rate: Annotated[
        str,
        typer.Option(
            "--rate",
            help="Messages per second, max, or live: each message when a real feed would "
            "publish it (about one per vehicle and second; event time follows the clock).",
            metavar="MSGS_PER_S|max",
        ),
    ] = "live",
    duration: Annotated[
        float, typer.Option("--duration", min=1, help="Seconds of driving (event time).")
    ] = 300.0,
    seed: Annotated[int, typer.Option("--seed", help="The same seed sends the same messages.")] = 0,
    to: Annotated[
        SimulationTarget,
        typer.Option(
            "--to",
            help="mqtt: publish on the HFP topics; kafka: straight through the vehicle processor "
            "to input.vehicle.positions.",
        ),
    ] = SimulationTarget.mqtt,
    qos: Annotated[int, typer.Option("--qos", min=0, max=2, help="MQTT QoS 0, 1 or 2.")] = 1,
    topic_root: Annotated[
        str,
        typer.Option(
            "--topic-root", help="Put before /hfp in every MQTT topic (a namespace of your own)."
        ),
    ] = "",
) -> None:
    """Simulate HSL vehicles: buses and trams drive 36 Helsinki routes both ways, each
    publishing an HFP v2 VP event about once a second on its topic, exactly as HSL's feed:
    /hfp/v2/journey/ongoing/vp/MODE/OPERATOR/VEHICLE/ROUTE/DIRECTION/HEADSIGN/START/NEXT_STOP/
    GEOHASH_LEVEL/GEOHASH.

    The feed is real: a small share of positions without a GPS fix (lat/long null), messages
    held in tunnels and published in a burst when the vehicle is out, a few duplicates, a little
    disorder. Event times start now; the same --seed sends the same messages.
    """
    settings = settings_from(ctx)
    simulation = VehicleSimulation(
        vehicles=vehicles, duration_s=duration, seed=seed, root=topic_root
    )
    messages_per_s = _messages_per_s(rate)
    sent = TextColumn("{task.completed:,} messages")
    with rate_progress(f"{vehicles} vehicles → {to.value}", "messages", sent) as on_progress:
        result = run_vehicle_simulation(
            settings,
            simulation,
            target=to.value,
            rate=messages_per_s,
            qos=qos,
            on_progress=on_progress,
        )
    console.print(_summary(result, vehicles, qos))


def _messages_per_s(text: str) -> Rate:
    """--rate: live (each message when a real feed would publish it), max (None: no limit) or
    a number of messages per second."""
    word = text.strip().lower()
    if word in (LIVE, "max"):
        return LIVE if word == LIVE else None
    try:
        rate = float(text)
    except ValueError:
        raise InputError(f"--rate takes messages per second, live or max, not {text!r}") from None
    if not rate > 0:
        raise InputError(f"--rate must be positive, not {text}")
    return rate


def _summary(result: SimulationResult, vehicles: int, qos: int) -> str:
    line = (
        f"sent [bold]{result.rows:,}[/] positions of {vehicles:,} vehicles "
        f"({result.payload_bytes / 1e6:,.1f} MB) to [bold]{result.destination}[/] in "
        f"{result.seconds:.1f} s: [bold]{result.rows_per_s:,.0f}[/] messages/s"
    )
    return line + delivery_summary(result, qos)


class _MachinesByDefault(TyperGroup):
    """A group whose first argument, when it names no command, goes to `machines`."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = ["machines", *args]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    """`simulate` is a group: `machines` (`simulate_cmd`, the default) and `vehicles` (here)."""
    group = typer.Typer(
        cls=_MachinesByDefault,
        help="Simulate sources: machines replaying real rows (the default command: `simulate "
        "[FILE]` is `simulate machines [FILE]`), or HSL vehicles publishing HFP positions.",
    )
    group.command("machines")(simulate)
    group.command("vehicles")(simulate_vehicles)
    app.add_typer(group, name="simulate")
