"""Packed output rows: pairs of many things at once pack as one thing at a time does."""

from __future__ import annotations

import itertools
import json

import numpy as np

from statestream.formats import pair_json_lines, pair_json_texts
from statestream.jobs.output_rows import OutputRows, records
from statestream.join import JoinedPairs, JoinSpec

SPEC = JoinSpec("actSpeed_C11", "vaTorque_C11", "vaPower_C11", function="power")


def _pairs(n: int, seed: int) -> JoinedPairs:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 10**6, n)).astype(np.float64) + 1.554e12
    v = rng.normal(size=(2, n)).round(3)
    v[0, ::7] = np.nan  # null in JSON
    return JoinedPairs(t, v[0], np.arange(n), t + 500.5, v[1], np.arange(n), v[0] * v[1])


def _split(things: np.ndarray, pairs: JoinedPairs) -> list[tuple[str, JoinedPairs]]:
    fields = ("left_t", "left_v", "left_pos", "right_t", "right_v", "right_pos", "result")
    bounds = [0, *(np.flatnonzero(things[1:] != things[:-1]) + 1).tolist(), len(things)]
    return [
        (things[a], JoinedPairs(*(getattr(pairs, f)[a:b] for f in fields)))
        for a, b in itertools.pairwise(bounds)
    ]


def test_pairs_of_many_things_are_the_texts_and_runs_of_one_thing_at_a_time() -> None:
    things = np.array(["R1"] * 3 + ['M"2'] * 5 + ["R1"] * 2 + ["ä"] * 4, dtype=object)
    pairs = _pairs(len(things), seed=3)
    texts = pair_json_texts(things, SPEC, pairs)
    one_at_a_time = OutputRows()
    for thing, part in _split(things, pairs):
        one_at_a_time.add_many(
            "pair", "out", f"{thing}.vaPower_C11", pair_json_lines(thing, SPEC, part)
        )
    together = OutputRows()
    together.add_runs("pair", "out", things + ".vaPower_C11", texts)
    figures = {"records": 1}
    a, b = together.frame(figures, "records long"), one_at_a_time.frame(figures, "records long")
    assert a[["kind", "topic", "count", "keys"]].values.tolist() == (
        b[["kind", "topic", "count", "keys"]].values.tolist()
    )
    assert a["values"][0] == b["values"][0]
    assert json.loads(a["keys"][0]) == [
        ["R1.vaPower_C11", 3],
        ['M"2.vaPower_C11', 5],
        ["R1.vaPower_C11", 2],
        ["ä.vaPower_C11", 4],
    ]
    unpacked = list(records(a["topic"][0], a["keys"][0], a["values"][0]))
    assert [key for _, key, _ in unpacked] == (things + ".vaPower_C11").tolist()
    parsed = [json.loads(value) for _, _, value in unpacked]
    assert [p["thing"] for p in parsed] == things.tolist()
    assert [p["left"]["phenomenonTime"] for p in parsed] == pairs.left_t.tolist()


def test_no_pairs_add_no_row() -> None:
    rows = OutputRows()
    rows.add_runs("pair", "out", np.array([], dtype=object), [])
    assert rows.frame({}, "records long")["kind"].tolist() == ["figures"]
