"""The cell windows' pure core: cells, aggregates, watermark, allowed lateness, bounded state."""

from __future__ import annotations

import h3
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statestream.geo import (
    BatchWatermark,
    CellWindows,
    GeoSpec,
    GeoStateError,
    Positions,
    WindowCells,
    assign_cells,
    cell_names,
)

SPEC = GeoSpec(resolution=8, window_ms=60_000, disorder_ms=5_000, allowed_lateness_ms=60_000)
CELLS = assign_cells(np.array([60.17, 60.18, 60.19]), np.array([24.94, 24.95, 24.96]), 8)


def _run(spec: GeoSpec, positions: Positions, cuts: list[int], restore: bool = False):
    """Feed `positions` in batches cut at `cuts` (the watermark moving between batches, as
    Spark's does); returns (all results as a frame, late mask, the windows)."""
    windows, watermark = CellWindows(spec), BatchWatermark(spec.disorder_ms)
    frames, late, now = [], [], watermark.value
    for part in np.split(np.arange(len(positions)), cuts):
        batch = positions.take(part)
        step = windows.process(batch, now)
        frames.append(pd.DataFrame(step.results.__dict__))
        late.append(step.late)
        assert all(s + spec.window_ms + spec.allowed_lateness_ms > now for s in windows.windows)
        if restore:  # through the stored form, as between two micro-batches
            stored = {s: WindowCells.from_bytes(w.to_bytes()) for s, w in windows.windows.items()}
            windows = CellWindows(spec, stored)
        now = watermark.after(batch.t)
    step = windows.process(positions.take(np.zeros(0, dtype=bool)), now)  # the no-data batch
    frames.append(pd.DataFrame(step.results.__dict__))
    return pd.concat(frames, ignore_index=True), np.concatenate([*late, np.zeros(0, bool)]), windows


def _reference(positions: Positions, window_ms: int) -> dict:
    frame = pd.DataFrame(positions.__dict__).assign(start=lambda f: f.t // window_ms * window_ms)
    table = frame.groupby(["start", "cell"]).agg(
        vehicles=("vehicle", "nunique"),
        positions=("vehicle", "size"),
        speed=("speed", "mean"),
        delay=("delay", "mean"),
    )
    return {key: tuple(row) for key, row in table.iterrows()}


def _latest_finals(results: pd.DataFrame) -> dict:
    finals = results[results.final].drop_duplicates(["window_start", "cell"], keep="last")
    return {
        (r.window_start, r.cell): (r.vehicles, r.positions, r.mean_speed, r.mean_delay)
        for r in finals.itertuples()
    }


def _same(actual: dict, expected: dict) -> None:
    assert set(actual) == set(expected)
    for key, values in expected.items():
        assert actual[key][:2] == values[:2]
        np.testing.assert_allclose(actual[key][2:], values[2:], equal_nan=True)


@st.composite
def streams(draw):
    """Positions of a few vehicles in three cells over ~5 minutes, disorder within 5 s."""
    count = draw(st.integers(1, 120))
    t = np.sort(draw(st.lists(st.integers(0, 300_000), min_size=count, max_size=count)))
    jitter = np.array(draw(st.lists(st.integers(0, 5_000), min_size=count, max_size=count)))
    order = np.argsort(t + jitter, kind="stable")
    speed = draw(st.lists(st.one_of(st.none(), st.floats(0, 30)), min_size=count, max_size=count))
    positions = Positions.of(
        t[order],
        CELLS[draw(st.lists(st.integers(0, 2), min_size=count, max_size=count))],
        draw(st.lists(st.integers(1, 4), min_size=count, max_size=count)),
        np.array([np.nan if s is None else s for s in speed]),
        np.array(draw(st.lists(st.integers(-60, 60), min_size=count, max_size=count)), float),
    )
    cuts = sorted(set(draw(st.lists(st.integers(1, max(count - 1, 1)), max_size=6))))
    return positions, [c for c in cuts if c < count]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.booleans())
def test_out_of_order_within_the_watermark_changes_nothing(stream, restore) -> None:
    positions, cuts = stream
    results, late, windows = _run(SPEC, positions, cuts, restore)
    assert not late.any()
    watermark = int(positions.t.max()) - 5_000
    closed = {k: v for k, v in _reference(positions, 60_000).items() if k[0] + 60_000 <= watermark}
    _same(_latest_finals(results), closed)
    on_time = results[results.final].duplicated(["window_start", "cell"])
    assert not on_time.any()  # one final per (window, cell): nothing came after it
    assert all(start + 120_000 > watermark for start in windows.windows)  # the rest dropped


@settings(max_examples=40, deadline=None)
@given(streams(), st.integers(0, 400_000))
def test_a_late_position_updates_its_window_or_is_late(stream, late_t) -> None:
    positions, _ = stream
    stray = Positions.of([late_t], [CELLS[0]], [9], [1.0], [2.0])
    both = Positions(
        *(
            np.append(a, b)
            for a, b in zip(positions.__dict__.values(), stray.__dict__.values(), strict=True)
        )
    )
    results, late, _ = _run(SPEC, both, [len(positions)])
    watermark = int(positions.t.max()) - 5_000
    start = late_t // 60_000 * 60_000
    assert late[-1] == (start + 120_000 <= watermark)
    if not late[-1]:  # the stray's window is updated: its last result counts it
        mine = results[(results.window_start == start) & (results.cell == CELLS[0])].iloc[-1]
        assert mine.final == (start + 60_000 <= watermark)
        assert _reference(both.take(~late), 60_000)[(start, CELLS[0])][1] == mine.positions


def test_results_vehicles_positions_and_means() -> None:
    positions = Positions.of(
        [1_000, 2_000, 3_000, 61_000, 200_000],
        [CELLS[0], CELLS[0], CELLS[1], CELLS[0], CELLS[2]],
        [1, 1, 2, 1, 3],
        [2.0, np.nan, 5.0, 1.0, 0.0],
        [np.nan, np.nan, -10.0, 4.0, 0.0],
    )
    step = CellWindows(SPEC).process(positions, watermark=130_000)
    assert step.late.tolist() == [True, True, True, False, False]
    r = step.results
    assert r.window_start.tolist() == [60_000, 180_000]
    assert r.final.tolist() == [True, False]
    assert (r.vehicles.tolist(), r.positions.tolist()) == ([1, 1], [1, 1])
    assert cell_names(r.cell) == [
        h3.latlng_to_cell(60.17, 24.94, 8),
        h3.latlng_to_cell(60.19, 24.96, 8),
    ]


def test_a_window_without_speeds_has_a_null_mean() -> None:
    step = CellWindows(SPEC).process(Positions.of([1_000], [CELLS[0]], [1]), watermark=0)
    assert np.isnan(step.results.mean_speed).all() and np.isnan(step.results.mean_delay).all()


def test_state_of_another_format_is_refused() -> None:
    with pytest.raises(GeoStateError, match="new checkpoint"):
        WindowCells.from_bytes(b"\x00" * 16)
    with pytest.raises(GeoStateError, match="damaged"):
        WindowCells.from_bytes(WindowCells.empty().to_bytes() + b"\x00" * 8)


def test_positions_without_a_fix_get_no_cell() -> None:
    cells = assign_cells(np.array([np.nan, 91.0, 60.17]), np.array([24.9, 24.9, np.inf]), 8)
    assert cells.tolist() == [0, 0, 0]
