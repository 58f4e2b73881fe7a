"""Packed output rows: pairs of many things at once pack as one thing at a time does."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pyarrow as pa

from statestream.codecs.pair_json import pair_json_block, pair_json_lines, pair_json_texts
from statestream.exactly_once.packed_rows import OutputRows, records, value_runs
from statestream.join import CodedNames, JoinedPairs, JoinSpec

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


def test_a_block_of_coded_things_packs_as_texts_and_runs_do() -> None:
    names = ["R1", 'M"2', "ä"]
    codes = np.array([0, 0, 0, 1, 1, 0, 2, 2, 2, 2])
    pairs = _pairs(len(codes), seed=4)
    things = np.asarray(names, dtype=object)[codes]
    by_texts = OutputRows()
    by_texts.add_runs("pair", "out", things + ".p", pair_json_texts(things, SPEC, pairs))
    by_block = OutputRows()
    runs = [(f"{names[code]}.p", n) for code, n in value_runs(codes)]
    by_block.add_block("pair", "out", runs, pair_json_block(CodedNames(codes, names), SPEC, pairs))
    figures = {"records": 1}
    a, b = by_texts.frame(figures, "records long"), by_block.frame(figures, "records long")
    assert a.drop(columns="values").equals(b.drop(columns="values"))
    assert a["values"][0] == b["values"][0]
    assert by_block.count("pair") == len(codes)
    texts = [value.decode() for _, _, value in records("out", b["keys"][0], b["values"][0])]
    assert [json.loads(text)["thing"] for text in texts] == things.tolist()


def test_dead_letters_of_an_arrow_backed_raw_column_keep_a_missing_value_missing() -> None:
    raw = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([b"{oops", None], pa.binary())))
    rejects = pd.DataFrame(
        {"reason": ["bad JSON", "empty message"], "raw": raw, "partition": [0, 1], "offset": [5, 6]}
    )
    rows = OutputRows()
    rows.add_dead_letters("geo", "dead", "in", rejects)
    frame = rows.frame({}, "records long")
    sent = [
        json.loads(v)
        for _, _, v in records(frame["topic"][0], frame["keys"][0], frame["values"][0])
    ]
    assert [(s["reason"], s["raw"], s["offset"]) for s in sent] == [
        ("bad JSON", "{oops", 5),
        ("empty message", None, 6),
    ]
