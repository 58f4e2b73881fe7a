"""The pipeline benchmark's input, expected pairs, comparison and latency arithmetic."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
from benchmarks.pair_latency import (
    PairLatencies,
    burst_seconds,
    certain_at,
    largest_burst,
    pair_latencies,
)
from benchmarks.pipeline_burst import burst_records, released_pairs
from benchmarks.pipeline_input import (
    ScaledRecords,
    compare_pairs,
    expected_pairs,
    pair_keys_from_json,
    scaled_sample,
)

from statestream.join import JoinSpec
from statestream.offline_join import join_lines

SPEC = JoinSpec("actSpeed_C11", "vaTorque_C11", "vaPower_C11", function="power")


def test_scaled_sample_clones_every_record_in_time_order() -> None:
    records = scaled_sample(50_000)
    assert len(records) == 3 * 19_825  # three clones of the 19,825 records of the sample
    assert np.all(np.diff(records.t) >= 0)
    assert records.thing_count == 3 * 3
    per_clone = pd.Series(records.things).str.rsplit("-", n=1).str[1].value_counts()
    assert set(per_clone) == {19_825}


def test_expected_pairs_are_the_offline_joins_pairs_for_the_same_messages() -> None:
    records = scaled_sample(30_000)
    lines = (value.encode() + b"\n" for _, value in records.kafka_messages())
    out = io.StringIO()
    join_lines(lines, [SPEC], out, io.StringIO, flush=False)
    offline = pair_keys_from_json(out.getvalue().encode().splitlines())
    expected = expected_pairs(records, [SPEC])
    assert len(expected) == len(offline) > 10_000
    assert compare_pairs(expected, offline) == (len(expected), 0, 0)


def test_compare_counts_found_missed_and_extra_pairs() -> None:
    expected = pd.DataFrame({"thing": ["a", "a", "b"], "left_t": [1, 2, 3], "right_t": [1, 3, 3]})
    got = pd.DataFrame({"thing": ["a", "b", "b"], "left_t": [1, 3, 9], "right_t": [1, 3, 9]})
    assert compare_pairs(expected, got) == (2, 1, 1)


def test_every_pair_has_the_slice_it_became_certain_in() -> None:
    records = scaled_sample(30_000)
    certain = certain_at(records, [SPEC], slice_size=100)
    assert len(certain) == len(expected_pairs(records, [SPEC])) > 10_000
    assert all(start % 100 == 0 for start in certain.values())


def _pair(left_t: int, right_t: int) -> bytes:
    return json.dumps(
        {
            "thing": "R1",
            "left": {"quantity": SPEC.left, "phenomenonTime": left_t, "result": 1},
            "right": {"quantity": SPEC.right, "phenomenonTime": right_t, "result": 1},
        }
    ).encode()


def test_latency_runs_from_the_record_that_made_the_pair_certain() -> None:
    # L@14, R@16, R@17, L@20 (the spec's example): (L@14, R@17) is certain only when L@20
    # shows that no L record comes between them, one record after the later of its two
    quantities = [SPEC.left, SPEC.right, SPEC.right, SPEC.left]
    records = ScaledRecords(
        np.array(["R1"] * 4, dtype=object),
        np.array(quantities, dtype=object),
        np.array([14, 16, 17, 20], dtype=np.int64),
        np.ones(4),
    )
    certain = certain_at(records, [SPEC], slice_size=1)
    assert certain == {
        ("R1", SPEC.left, 14.0, 16.0): 1,
        ("R1", SPEC.left, 14.0, 17.0): 3,
        ("R1", SPEC.left, 20.0, 16.0): 3,
        ("R1", SPEC.left, 20.0, 17.0): 3,
    }
    sent_at = np.array([0.0, 1.0, 2.0, 3.0])
    seen = 10.0
    received = [(seen, _pair(14, 16)), (seen, _pair(14, 17)), (seen, _pair(20, 17))]
    latencies = pair_latencies(records, sent_at, certain, received)
    assert latencies.latency.tolist() == [9.0, 7.0, 7.0]
    assert latencies.after_later_record.tolist() == [9.0, 8.0, 7.0]
    assert latencies.waited.tolist() == [0.0, 1.0, 0.0]


def test_the_largest_burst_counts_pairs_made_certain_by_one_window_of_records() -> None:
    certain = {
        ("R1", SPEC.left, float(t), float(t)): start for t, start in enumerate([0, 1, 2, 2, 5])
    }
    assert largest_burst(certain, window=3) == 4  # records 0-2 made four pairs certain
    assert largest_burst(certain, window=1) == 2
    assert largest_burst({}, window=3) == 0


def test_the_largest_burst_takes_as_long_as_its_slowest_pair() -> None:
    certain = {
        ("R1", SPEC.left, float(t), float(t)): start for t, start in enumerate([0, 1, 2, 2, 5])
    }
    pairs = PairLatencies(
        latency=np.array([0.5, 0.9, 0.4, 0.7, 3.0]),
        after_later_record=np.zeros(5),
        starts=np.array([0, 1, 2, 2, 5]),
    )
    assert burst_seconds(certain, 3, pairs) == 0.9  # window 0-2; record 5's 3.0 s is not in it
    assert burst_seconds({}, 3, pairs) is None


def test_the_burst_release_makes_its_pairs_certain_at_once() -> None:
    held, release = burst_records(250_000, things=1_000)
    assert len(release) == 1_000 and release.thing_count == 1_000
    assert np.all(np.diff(held.t) >= 0)  # time order across things
    assert release.t.min() > held.t.max()
    released = released_pairs(held, release, [SPEC])
    assert released >= 250_000
    # the same count as the offline join's pairs of all records less those certain before
    lines = [json.dumps(r).encode() for r in _narrow(held) + _narrow(release)]
    out = io.StringIO()
    join_lines(lines, [SPEC], out, io.StringIO, flush=False)
    total = len(out.getvalue().splitlines())
    assert released == total - 1_000  # one pair per thing is certain before the release


def _narrow(records: ScaledRecords) -> list[dict]:
    return [
        {"thing": th, "quantity": q, "phenomenonTime": int(t), "result": float(v)}
        for th, q, t, v in zip(
            records.things, records.quantities, records.t, records.v, strict=True
        )
    ]
