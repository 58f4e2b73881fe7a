"""The pipeline benchmark's input, expected pairs, comparison and latency arithmetic."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
from benchmarks.pipeline_bench import _pair_latencies
from benchmarks.pipeline_input import (
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


def test_latency_is_measured_from_the_later_record_of_a_pair() -> None:
    records = scaled_sample(1)
    first = {
        k: i
        for i, k in enumerate(
            zip(
                records.things.tolist(),
                records.quantities.tolist(),
                records.t.tolist(),
                strict=True,
            )
        )
    }
    thing = records.things[0]
    speed = next(k for k in first if k[0] == thing and k[1] == SPEC.left)
    torque = next(k for k in first if k[0] == thing and k[1] == SPEC.right)
    sent_at = np.arange(len(records), dtype=np.float64)
    pair = {
        "thing": thing,
        "left": {"quantity": speed[1], "phenomenonTime": speed[2], "result": 1},
        "right": {"quantity": torque[1], "phenomenonTime": torque[2], "result": 1},
    }
    seen = 10_000.5
    latencies = _pair_latencies(records, sent_at, [(seen, json.dumps(pair).encode())])
    assert latencies.tolist() == [seen - max(first[speed], first[torque])]
