"""The quantity statistics query on real Kafka and real Spark: synthetic series with known
answers, held to the plain reference; late and bad records where they belong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from confluent_kafka import Producer

from statestream.codecs.bad_input import DEAD_LETTER_FIELDS, LATE_FIELDS
from statestream.config import Settings
from statestream.queries.quantity_stats import QUERY
from statestream.queries.quantity_stats.job import QuantityStatsOptions, start_quantity_stats_query
from statestream.queries.quantity_stats.reference import reference_quantity_stats
from statestream.queries.quantity_stats.spec import QuantitySpec
from tests.fuzz_inputs import assert_each_dead_lettered, bad_values
from tests.integration.quantity_support import (
    assert_written_as_the_reference,
    latest_windows,
    produce_records,
    quantity_topic_settings,
    read_json,
    repeated_keys,
)

pytestmark = pytest.mark.integration

BASE_MS = 1_554_096_000_000  # a whole minute (epoch ms)
SPEC = QuantitySpec(window_ms=10_000, out_of_orderness_ms=3_000, allowed_lateness_ms=10_000)
SECONDS = np.arange(200.0)
VALUES = (np.arange(200) * 7 % 23) - 11.0  # negative and positive, exact sums


def _frame(thing: str, quantity: str, seconds, values) -> pd.DataFrame:
    t = BASE_MS + np.asarray(seconds, dtype=float) * 1000
    return pd.DataFrame({"thing": thing, "quantity": quantity, "t": t, "v": values})


def _moved(seconds: list, values: list, record: tuple[float, float], after_s: float) -> None:
    """Put `record` (seconds, value) into the arrival order right after the record `after_s`."""
    at = seconds.index(after_s) + 1
    seconds.insert(at, record[0])
    values.insert(at, record[1])


def _late_but_allowed() -> pd.DataFrame:
    """In order but for records that refine windows already written: 55 s (−100) after 64 s,
    a new last value 59.5 s (42) after 66 s, a tie 57 s after 70 s; after 80 s one at the limit
    of the allowed lateness (67 s, taken: a new max of [60 s, 70 s)) and one just beyond it."""
    seconds, values = SECONDS.tolist(), (VALUES * 2).tolist()
    del values[55], seconds[55]
    _moved(seconds, values, (55.0, -100.0), 64.0)
    _moved(seconds, values, (59.5, 42.0), 66.0)
    _moved(seconds, values, (57.0, 7.0), 70.0)
    _moved(seconds, values, (66.999, 500.0), 80.0)  # watermark 77 s − 10 s: late
    _moved(seconds, values, (67.0, 1234.5), 80.0)  # exactly the limit: taken
    return _frame("M2", "load", seconds, values)


def _ties() -> pd.DataFrame:
    """Equal times: the later record is the last value, also when it comes late (29 s)."""
    seconds, values = SECONDS[:60].tolist(), (VALUES[:60] + 0.5).tolist()
    _moved(seconds, values, (9.0, 6.0), 9.0)  # after 9 s (its own value): last of [0, 10 s)
    _moved(seconds, values, (19.9995, -8.25), 19.0)  # a fraction of a ms: last of [10 s, 20 s)
    _moved(seconds, values, (29.0, -3.0), 34.0)  # [20 s, 30 s) was written at 33 s
    return _frame("M3", "temperature", seconds, values)


def _synthetic() -> tuple[pd.DataFrame, int]:
    """Six series of three things in the order they are produced, each in two parts (column
    `part`: the query runs after each), and the row of the stray. The second part of M2 load and
    of M3 temperature starts with a record that refines a window the first run wrote."""
    shuffled = np.argsort(SECONDS + np.random.default_rng(7).uniform(0, 2.9, len(SECONDS)))
    stray_at = 150  # 100 s after 149 s: beyond out-of-orderness + allowed lateness
    gap = (SECONDS < 100) | (SECONDS >= 131)  # no record in [100 s, 131 s): no such windows
    refined, ties = _late_but_allowed(), _ties()
    series = [
        (_frame("M1", "temperature", SECONDS, VALUES), 100),
        (_frame("M1", "load", SECONDS[shuffled], VALUES[shuffled]), 100),
        (
            _frame(
                "M2",
                "temperature",
                np.insert(SECONDS, stray_at, 100.0),
                np.insert(VALUES, stray_at, 999.0),
            ),
            100,
        ),
        (refined, int(np.flatnonzero(refined.v == -100.0)[0])),
        (ties, int(np.flatnonzero(ties.v == -3.0)[0])),
        (_frame("M3", "load", SECONDS[gap], -(np.arange(200)[gap] % 13) - 0.25), 50),
    ]
    parts = [frame.iloc[:cut].assign(part=1) for frame, cut in series]
    parts += [frame.iloc[cut:].assign(part=2) for frame, cut in series]
    records = pd.concat(parts, ignore_index=True)
    stray = records.index[(records.thing == "M2") & (records.v == 999.0)]
    return records, int(stray[0])


def _of(results: dict, thing: str, quantity: str) -> dict:
    return {s - BASE_MS: v for (th, q, s), v in results.items() if (th, q) == (thing, quantity)}


def _known_in_order() -> dict:
    """The windows of SECONDS, VALUES computed directly: each full 10 s window the watermark
    (199 s − 3 s) passed."""
    frame = pd.DataFrame({"start": (SECONDS // 10 * 10_000).astype(int), "v": VALUES})
    stats = frame.groupby("start")["v"].agg(["count", "min", "max", "mean", "last"])
    return {s: tuple(row) for s, row in stats.iterrows() if s + 10_000 <= 196_000}


def _bad_inputs(settings: Settings) -> tuple[list[bytes], dict[str, bytes]]:
    """Undecodable values on machine_data: some named here (returned first), the fuzz kinds."""
    topic = settings.topics.machine_data
    producer = Producer(settings.kafka.client_config())
    unkeyed = [b"{not json", b'{"thing": "X", "quantity": "temperature", "phenomenonTime": 5}']
    for raw in unkeyed:
        producer.produce(topic, value=raw)
    keyed = {
        b"X.temperature": b'{"thing": "X", "quantity": "temperature", "phenomenonTime": 5, '
        b'"result": NaN}',
        b"X.state": b'{"thing": "X", "quantity": "state", "phenomenonTime": 5, "result": "on"}',
        b"Y.temperature": b'{"thing": "X", "quantity": "temperature", "phenomenonTime": 5, '
        b'"result": 1}',
    }
    for key, raw in keyed.items():
        producer.produce(topic, key=key, value=raw)
    template = {"thing": "X", "quantity": "temperature", "phenomenonTime": 5, "result": 1.0}
    kinds = bad_values(template, time_field="phenomenonTime", number_field="result")
    for raw in kinds.values():
        producer.produce(topic, key=b"X.temperature", value=raw)
    assert producer.flush(30) == 0
    return [*unkeyed, *keyed.values()], kinds


def _run(spark, settings: Settings, name: str, checkpoint: Path) -> list[dict]:
    """One run of the query over what machine_data holds; its batches' metrics."""
    query = start_quantity_stats_query(
        spark,
        settings,
        QuantityStatsOptions(
            available_now=True,
            max_offsets_per_trigger=200,
            query_name=name,
            checkpoint=checkpoint,
            spec=SPEC,
        ),
    )
    query.awaitTermination(240)
    assert not query.isActive, "the query did not finish"
    assert query.exception() is None
    return [QUERY.batch_metrics(p) for p in query.recentProgress]


def test_synthetic_series_give_the_reference_windows(
    spark, local_services: Settings, unique_name: str, tmp_path: Path
) -> None:
    settings = quantity_topic_settings(local_services, unique_name, 3)
    records, stray = _synthetic()
    first, second = records[records.part == 1], records[records.part == 2]
    origins = dict(zip(first.index, produce_records(settings, first), strict=True))
    metrics = _run(spark, settings, unique_name, tmp_path / "checkpoint")
    origins.update(zip(second.index, produce_records(settings, second), strict=True))
    bad, kinds = _bad_inputs(settings)
    metrics += _run(spark, settings, unique_name, tmp_path / "checkpoint")  # from the state

    results = read_json(settings, settings.topics.machine_quantities)
    assert_written_as_the_reference(results, records, SPEC)
    latest = latest_windows(results)
    # refined by the second run: written again, the latest record counts
    assert {("M2", "load", BASE_MS + 50_000), ("M3", "temperature", BASE_MS + 20_000)} <= set(
        repeated_keys(results)
    )
    known = _known_in_order()
    assert len(known) == 19
    assert _of(latest, "M1", "temperature") == known  # in order
    assert _of(latest, "M1", "load") == known  # shuffled within the out-of-orderness
    assert _of(latest, "M2", "temperature") == known  # the stray changed nothing
    refined = _of(latest, "M2", "load")
    assert refined[50_000][:2] == (12, -100.0) and refined[50_000][4] == 42.0
    assert refined[60_000][:3] == (11, min(VALUES[60:70] * 2), 1234.5)
    assert [_of(latest, "M3", "temperature")[s][4] for s in (0, 10_000, 20_000)] == [
        6.0,
        -8.25,
        -3.0,
    ]
    gapped = _of(latest, "M3", "load")
    assert sorted(gapped) == [s for s in range(0, 190_000, 10_000) if not 100_000 <= s < 130_000]
    assert all(low < 0 and high < 0 for _, low, high, _, _ in gapped.values())

    late = read_json(settings, settings.topics.late)
    expected_late, late_rows = [], []
    for (thing, quantity), rows in records.groupby(["thing", "quantity"], sort=False):
        outcome = reference_quantity_stats(rows["t"].tolist(), rows["v"].tolist(), SPEC)
        for row, is_late, met in zip(rows.index, outcome.late, outcome.watermarks, strict=True):
            if is_late:
                t, v = records.loc[row, ["t", "v"]]
                late_rows.append(row)
                expected_late.append((thing, quantity, t, v, met, *origins[row]))
    assert late_rows[0] == stray and len(late_rows) == 2  # and 66.999 s of M2 load
    assert expected_late[0][4] == BASE_MS + 149_000 - SPEC.out_of_orderness_ms
    assert sorted(
        (
            r["thing"],
            r["quantity"],
            r["phenomenonTime"],
            r["result"],
            r["watermark"],
            r["partition"],
            r["offset"],
        )
        for r in late
    ) == sorted(expected_late)
    assert all(r["stage"] == "quantity_stats" and r["reason"] == "late" for r in late)
    assert all(r["source_topic"] == settings.topics.machine_data for r in late)
    assert all(set(LATE_FIELDS) < r.keys() for r in late)
    assert all(r["allowed_lateness_ms"] == SPEC.allowed_lateness_ms for r in late)

    letters = read_json(settings, settings.topics.dead_letter)
    dead = {d["raw"]: d for d in assert_each_dead_lettered(letters, kinds, "quantity_stats")}
    assert sorted(dead) == sorted(raw.decode() for raw in bad)  # each once, as on the topic
    assert "bad JSON" in dead["{not json"]["reason"]
    assert dead[bad[1].decode()]["reason"] == "missing result"
    assert dead[bad[2].decode()]["reason"] == "result is not a finite number"
    assert "is not a number" in dead[bad[3].decode()]["reason"]  # a text result
    assert "not the record's thing.quantity" in dead[bad[4].decode()]["reason"]
    assert all(d["source_topic"] == settings.topics.machine_data for d in letters)
    assert all(
        d["stage"] == "quantity_stats" and list(d) == list(DEAD_LETTER_FIELDS) for d in letters
    )

    assert sum(m["records_in"] > 0 for m in metrics) > 2, "expected several batches a run"
    assert sum(m["records_in"] for m in metrics) == len(records) + len(bad) + len(kinds)
    assert sum(m["windows_out"] for m in metrics) == len(results)
    assert sum(m["late"] for m in metrics) == len(late) == 2
    assert sum(m["malformed"] for m in metrics) == len(letters) == len(bad) + len(kinds)
