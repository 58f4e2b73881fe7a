"""The as-of stream by example: when a left row is certain, late rows, bounded state, the state as
bytes, placeholders, and clear errors. Times are in the units of t, one key "a" unless said."""

from __future__ import annotations

import io

import numpy as np
import pytest

from statestream.join.asof import AsofRule, asof_indices
from statestream.join.asof_stream import AsofOutput, AsofStream, Rows

_NONE = Rows.empty()
_orders = iter(range(1_000_000))  # arrival order, increasing over every stream of this module


def _rows(*times: float, key: str = "a") -> Rows:
    return Rows(np.array([key] * len(times)), np.array(times), [next(_orders) for _ in times])


def _pairs(out: AsofOutput) -> list[tuple[float, float | None]]:
    """(left t, matched right t or None) for each emitted left row."""
    right = [float(t) if m else None for t, m in zip(out.right.t, out.matched, strict=True)]
    return list(zip(out.left.t.tolist(), right, strict=True))


def test_backward_waits_until_the_right_watermark_passes_the_left_row() -> None:
    """L@5 with R@3: not yet, a right row at 4 or 5 may come. R@5: still not, another R@5 would
    be the match (the last at 5). R@6: now no right row at or below 5 can come: L@5 takes R@5.
    Without exact matches, R@5 is enough: what comes later is at 5 or after, and is not taken."""
    stream = AsofStream(AsofRule("backward"))
    assert _pairs(stream.push(_rows(5), _rows(3))) == []
    assert _pairs(stream.push(_NONE, _rows(5))) == []
    assert _pairs(stream.push(_NONE, _rows(6))) == [(5, 5)]

    strict = AsofStream(AsofRule("backward", allow_exact_matches=False))
    assert _pairs(strict.push(_rows(5), _rows(3))) == []
    assert _pairs(strict.push(_NONE, _rows(5))) == [(5, 3)]


def test_backward_without_a_later_right_row_waits_for_flush() -> None:
    stream = AsofStream(AsofRule("backward"))
    assert _pairs(stream.push(_rows(5), _rows(3))) == []
    assert _pairs(stream.push(_rows(6, 7), _NONE)) == []
    assert _pairs(stream.flush()) == [(5, 3), (6, 3), (7, 3)]


def test_forward_takes_the_first_right_row_once_it_is_released() -> None:
    """Disorder 2. L@5 and R@7: R@7 is not released (watermark 5), so R@6 may still come. R@9
    moves the watermark to 7: R@7 is released and L@5 takes it. A right row at the left row's
    own time is certain at once (a later row at 5 would come after it)."""
    stream = AsofStream(AsofRule("forward"), disorder=2)
    assert _pairs(stream.push(_rows(5), _rows(7))) == []
    assert _pairs(stream.push(_NONE, _rows(9))) == [(5, 7)]
    assert _pairs(stream.push(_rows(9), _rows(9))) == [(9, 9)]


def test_forward_with_a_tolerance_gives_up_when_nothing_near_can_come() -> None:
    """Disorder 3, tolerance 2. R@10 puts the watermark at 7: a right row at 7 may still come,
    2 from L@5: wait. R@11 puts it at 8: no right row within 2 of L@5 can come: no match."""
    stream = AsofStream(AsofRule("forward", tolerance=2), disorder=3)
    assert _pairs(stream.push(_rows(5), _rows(10))) == []
    assert _pairs(stream.push(_NONE, _rows(11))) == [(5, None)]


def test_nearest_emits_when_no_later_row_can_be_nearer() -> None:
    """Disorder 2. L@5, R@4, R@8: the watermark is 6, so a later right row is at 6 or after, at
    least 1 from L@5, no nearer than R@4 (and a tie goes backward): L@5 takes R@4 although R@8 is
    not released. With R@3 instead (2 away) it waits, until R@9 (watermark 7) rules out a
    nearer one."""
    stream = AsofStream(AsofRule("nearest"), disorder=2)
    assert _pairs(stream.push(_rows(5), _rows(4, 8))) == [(5, 4)]

    stream = AsofStream(AsofRule("nearest"), disorder=2)
    assert _pairs(stream.push(_rows(5), _rows(3, 8))) == []
    assert _pairs(stream.push(_NONE, _rows(9))) == [(5, 3)]


def test_late_rows_are_refused_the_same_way_for_every_split() -> None:
    """Disorder 1. Right: 5, 3 (late: watermark 4), 4. Left: 10, 8 (late: watermark 9), 9."""
    right, left = _rows(5, 3, 4), _rows(10, 8, 9)
    for split in ([3], [1, 1, 1], [2, 1]):
        stream, late_left, late_right = AsofStream(AsofRule(), disorder=1), [], []
        start = 0
        for size in split:
            part = np.arange(start, start + size)
            out = stream.push(left.take(part), right.take(part))
            late_left += out.late_left.t.tolist()
            late_right += out.late_right.t.tolist()
            start += size
        assert (late_left, late_right) == ([8], [3])
        assert _pairs(stream.flush()) == [(10, 5), (9, 5)]


def test_unmatched_rows_hold_placeholders() -> None:
    """The right columns come through; where there is no match, zeros, '' and None."""
    right = Rows(["a"], [3], [0], {"v": [2.5], "name": np.array(["r"]), "obj": np.array([{}])})
    stream = AsofStream(AsofRule("backward"))
    stream.push(Rows(["a", "b"], [5, 5], [0, 1]), right)
    out = stream.flush()
    assert list(out.matched) == [True, False]
    assert out.right.columns["v"].tolist() == [2.5, 0.0]
    assert out.right.columns["name"].tolist() == ["r", ""]
    assert out.right.columns["obj"].tolist() == [{}, None]


@pytest.mark.parametrize("direction", ["backward", "forward", "nearest"])
@pytest.mark.parametrize(("disorder", "tolerance"), [(0, None), (4, 5)])
def test_a_long_run_keeps_a_handful_of_rows_per_key(
    direction: str, disorder: int, tolerance: int | None
) -> None:
    """50,000 rows per side over 10 keys, left at even and right at odd times (shuffled within
    the disorder), in pushes of 500 per side: the state stays a few rows per key, and the result
    after flush equals the batch join."""
    rng = np.random.default_rng(7)
    n, keys, rule = 50_000, 10, AsofRule(direction, tolerance=tolerance)

    def side(first: int) -> tuple[np.ndarray, np.ndarray]:
        t = (np.arange(n) // keys) * 2 + first
        t = t + rng.integers(0, disorder + 1, n) if disorder else t
        return np.arange(n) % keys, np.maximum(t, np.maximum.accumulate(t) - disorder)

    (left_key, left_t), (right_key, right_t) = side(0), side(1)
    stream, emitted, largest = AsofStream(rule, disorder), {}, 0
    for start in range(0, n, 500):
        part = np.arange(start, start + 500)
        out = stream.push(
            Rows(left_key[part], left_t[part], part, {"id": part}),
            Rows(right_key[part], right_t[part], part, {"id": part}),
        )
        assert len(out.late_left) == len(out.late_right) == 0
        emitted.update(zip(out.left.columns["id"].tolist(), _ids(out), strict=True))
        largest = max(largest, stream.kept_right + stream.pending_left)
    assert largest <= 10 * keys
    emitted.update(zip((out := stream.flush()).left.columns["id"].tolist(), _ids(out), strict=True))
    expected = asof_indices(left_key, left_t, right_key, right_t, rule)
    assert [emitted[i] for i in range(n)] == expected.tolist()


def _ids(out: AsofOutput) -> list[int]:
    return np.where(out.matched, out.right.columns["id"], -1).tolist()


def test_the_state_round_trips_through_npz_bytes() -> None:
    """to_state is plain arrays: saved as .npz bytes and loaded, the stream goes on unchanged."""
    rule = AsofRule("nearest", tolerance=3.0)
    left = Rows(np.array(["a", "bb", "a"]), [1.0, 2.0, 7.0], [0, 1, 2], {"x": [1, 2, 3]})
    right = Rows(np.array(["a", "bb"]), [0.5, 2.5], [0, 1], {"y": [0.1, 0.2]})
    stream = AsofStream(rule, disorder=1.0)
    stream.push(left, right)
    buffer = io.BytesIO()
    np.savez(buffer, **stream.to_state())
    loaded = dict(np.load(io.BytesIO(buffer.getvalue())))
    resumed = AsofStream.from_state(rule, 1.0, loaded)
    more = Rows(np.array(["a", "bb"]), [9.0, 9.0], [2, 3], {"y": [0.3, 0.4]})
    for engine in (stream, resumed):
        engine.push(left.empty_like(), more)
    assert _pairs(resumed.flush()) == _pairs(stream.flush())


def test_a_fresh_stream_and_empty_pushes() -> None:
    stream = AsofStream(AsofRule())
    out = stream.push(Rows.empty(), Rows.empty())
    assert len(out.left) == len(out.late_left) == len(out.late_right) == 0
    assert len(stream.flush().left) == 0


# ---- errors ----------------------------------------------------------------------------------


def test_errors_are_clear_value_errors() -> None:
    with pytest.raises(ValueError, match="disorder must be >= 0"):
        AsofStream(AsofRule(), disorder=-1)
    with pytest.raises(ValueError, match="same length"):
        Rows(["a", "b"], [1], [0, 1])
    with pytest.raises(ValueError, match="order must hold integers"):
        Rows(["a"], [1], [0.5])
    with pytest.raises(ValueError, match="t must be an integer or float array"):
        Rows(["a"], ["noon"], [0])
    stream = AsofStream(AsofRule())
    with pytest.raises(ValueError, match="left and right t must both be integers or both floats"):
        stream.push(Rows(["a"], [1], [0]), Rows(["a"], [1.0], [0]))
    with pytest.raises(ValueError, match="the state lacks the array 'keys'"):
        AsofStream.from_state(AsofRule(), 0, {"format": np.array([1]), "finished": np.array([0])})


def test_order_must_increase_within_a_key_and_a_refused_push_changes_nothing() -> None:
    stream = AsofStream(AsofRule())
    with pytest.raises(ValueError, match="order must increase within a key"):
        stream.push(Rows(["a", "a"], [1, 2], [4, 4]), _NONE)
    stream.push(Rows(["a"], [1], [4]), Rows(["a"], [0], [0]))
    with pytest.raises(ValueError, match="right rows: order must increase"):
        stream.push(Rows(["a"], [2], [5]), Rows(["a"], [3], [0]))
    assert stream.pending_left == 1  # the refused push left no trace
    assert _pairs(stream.push(Rows(["b"], [2], [4]), Rows(["a"], [3], [1]))) == [(1, 0)]


def test_a_flushed_stream_takes_no_push() -> None:
    stream = AsofStream(AsofRule())
    stream.flush()
    with pytest.raises(ValueError, match="finished"):
        stream.push(_NONE, _NONE)
