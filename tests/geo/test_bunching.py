"""The bunching core without Spark: scripted vehicles, and any micro-batch split alike."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from statestream.geo.bunching import BunchingAlert, BunchingSpec, LineBunching

SPEC = BunchingSpec(distance_m=150.0, duration_ms=60_000.0, max_skew_ms=5_000.0)
LAT = 60.17
M_PER_DEGREE_LONG = 111_195.0 * np.cos(np.radians(LAT))  # east-west metres per degree


def track(
    vehicle: str, start_s: float, end_s: float, x0_m: float, speed: float = 8.0, **line
) -> pd.DataFrame:
    """Positions once a second of a vehicle driving east from `x0_m` (metres) at `speed`."""
    t = np.arange(start_s, end_s, 1.0)
    x = x0_m + speed * (t - start_s)
    return pd.DataFrame(
        {
            "vehicle": vehicle,
            "route": line.get("route", "1052"),
            "direction": line.get("direction", 1),
            "t": t * 1000.0,
            "lat": LAT,
            "long": 24.9 + x / M_PER_DEGREE_LONG,
            "mode": "bus",
        }
    )


def arrival(*tracks: pd.DataFrame) -> pd.DataFrame:
    """Tracks merged in event-time order (ties: in the order given)."""
    return pd.concat(tracks, ignore_index=True).sort_values("t", kind="stable", ignore_index=True)


def run(
    positions: pd.DataFrame, cuts: list[int] = (), spec: BunchingSpec = SPEC
) -> list[BunchingAlert]:
    """The alerts of `positions` (arrival order) fed in batches cut at `cuts`, each line its own
    state, stored as bytes between batches (as the Spark processor does)."""
    states: dict[tuple[str, int], bytes] = {}
    alerts = []
    bounds = [0, *sorted(cuts), len(positions)]
    for start, end in itertools.pairwise(bounds):
        batch = positions.iloc[start:end]
        for line, rows in batch.groupby(["route", "direction"], sort=True):
            stored = states.get(line)
            state = LineBunching(spec) if stored is None else LineBunching.from_bytes(spec, stored)
            step = state.process(
                rows["vehicle"].to_numpy(dtype=object),
                rows["t"].to_numpy(dtype=np.float64),
                rows["lat"].to_numpy(dtype=np.float64),
                rows["long"].to_numpy(dtype=np.float64),
                rows["mode"].to_numpy(dtype=object),
            )
            states[line] = state.to_bytes()
            alerts += step.alerts
    return alerts


def test_a_pair_close_for_a_minute_gives_exactly_one_alert() -> None:
    positions = arrival(track("22/1240", 0, 120, 100.0), track("22/1234", 0, 120, 0.0))
    alerts = run(positions)
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.vehicles == ("22/1234", "22/1240")
    assert alert.mode == "bus"
    assert alert.episode_start == 0.0
    assert alert.detected_at == 60_000.0
    assert abs(alert.distance_m - 92.0) < 0.1  # to 22/1240's latest position, 1 s (8 m) older
    assert abs((alert.long - 24.9) * M_PER_DEGREE_LONG - (480.0 + 572.0) / 2) < 0.1  # midpoint
    assert alert.lat == LAT and type(alert.lat) is float


def test_too_far_too_short_or_too_skewed_gives_none() -> None:
    far = arrival(track("22/1", 0, 120, 0.0), track("22/2", 0, 120, 160.0))
    short = arrival(track("22/1", 0, 120, 0.0), track("22/2", 0, 55, 100.0))
    assert run(far) == [] and run(short) == []
    a, b = track("22/1", 0, 130, 0.0), track("22/2", 6, 130, 48.0)
    every_12_s = arrival(a[a["t"] % 12_000 == 0], b[b["t"] % 12_000 == 6_000])  # 6 s apart
    assert run(every_12_s) == []
    assert len(run(every_12_s, spec=BunchingSpec(max_skew_ms=6_000.0))) == 1


def test_vehicles_of_other_routes_or_directions_give_none() -> None:
    a = track("22/1", 0, 120, 0.0)
    other_direction = track("22/2", 0, 120, 50.0, direction=2)
    other_route = track("22/3", 0, 120, 80.0, route="1053")
    assert run(arrival(a, other_direction, other_route)) == []
    same_line = track("22/4", 0, 120, 80.0)
    alerts = run(arrival(a, other_direction, other_route, same_line))
    assert [alert.vehicles for alert in alerts] == [("22/1", "22/4")]


def test_a_pair_that_separates_and_meets_again_gives_a_second_alert() -> None:
    a = track("22/1", 0, 300, 0.0)
    b = track("22/2", 0, 300, 100.0)
    gap = (b["t"] >= 90_000) & (b["t"] < 110_000)
    b.loc[gap, "long"] += 300.0 / M_PER_DEGREE_LONG  # 400 m ahead for 20 s
    alerts = run(arrival(a, b))
    assert [(x.episode_start, x.detected_at) for x in alerts] == [
        (0.0, 60_000.0),
        (110_000.0, 170_000.0),
    ]


def test_an_episode_ends_after_a_minute_without_comparable_positions() -> None:
    def alerts_with_tunnel(seconds: int) -> list[tuple[float, float]]:
        a = track("22/1", 0, 300, 0.0)
        b = track("22/2", 0, 300, 100.0)
        tunnel = (b["t"] > 70_000) & (b["t"] <= 70_000 + seconds * 1000)
        b.loc[tunnel, ["lat", "long"]] = np.nan  # without a fix: ignored
        return [(x.episode_start, x.detected_at) for x in run(arrival(a, b))]

    assert alerts_with_tunnel(70) == [(0.0, 60_000.0), (141_000.0, 201_000.0)]
    assert alerts_with_tunnel(50) == [(0.0, 60_000.0)]  # back within the minute: one episode


def test_positions_older_than_a_vehicles_newest_are_stale() -> None:
    line = LineBunching(SPEC)
    step = line.process(
        np.array(["22/1", "22/1", "22/1", "22/2"], dtype=object),
        np.array([5_000.0, 3_000.0, 5_000.0, 4_000.0]),
        np.array([LAT, LAT, LAT, np.nan]),
        np.full(4, 24.9),
        np.full(4, "bus", dtype=object),
    )
    assert (step.accepted, step.stale, step.no_fix, step.alerts) == (1, 2, 1, [])
    assert step.max_event_time == 5_000.0


@st.composite
def scenarios(draw) -> tuple[pd.DataFrame, list[int], pd.DataFrame]:
    """Vehicles of one line meeting and parting; arrival with per-vehicle lag and disorder,
    in two interleavings; and cuts into micro-batches."""
    count = draw(st.integers(2, 4))
    frames = []
    for i in range(count):
        start = draw(st.integers(0, 40))
        end = start + draw(st.integers(20, 150))
        frame = track(f"22/{i}", start, end, draw(st.integers(0, 400)), draw(st.integers(2, 12)))
        frame["t"] += draw(st.integers(0, 999))
        frames.append(frame)
    positions = pd.concat(frames, ignore_index=True)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def arrival_order() -> pd.DataFrame:
        lag = {v: rng.uniform(0, 1_000) for v in positions["vehicle"].unique()}
        jitter = rng.uniform(0, 1_000, len(positions))  # a little disorder within a vehicle
        key = positions["t"] + positions["vehicle"].map(lag) + jitter
        return positions.iloc[np.argsort(key.to_numpy(), kind="stable")]

    first = arrival_order().reset_index(drop=True)
    per_vehicle = first.groupby("vehicle", sort=False).cumcount()  # keep each vehicle's order
    other = arrival_order()
    other = other.assign(n=other.groupby("vehicle", sort=False).cumcount())
    order = pd.DataFrame({"vehicle": first["vehicle"], "n": per_vehicle, "row": first.index})
    second = first.loc[other.merge(order, on=["vehicle", "n"])["row"]].reset_index(drop=True)
    cuts = draw(st.lists(st.integers(0, len(first)), max_size=8))
    return first, cuts, second


SMALL = BunchingSpec(distance_m=150.0, duration_ms=20_000.0, max_skew_ms=3_000.0)


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_any_micro_batch_split_and_interleaving_gives_the_same_alerts(scenario) -> None:
    positions, cuts, reinterleaved = scenario
    whole = run(positions, spec=SMALL)
    assert run(positions, cuts, spec=SMALL) == whole
    assert run(reinterleaved, cuts, spec=SMALL) == whole
    pairs = [alert.vehicles for alert in whole]
    assert len(pairs) == len({(a.vehicles, a.episode_start) for a in whole})
