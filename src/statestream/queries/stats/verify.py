"""The statistics query's results against its reference, as a chaos run ends (`QueryDef.verify`):
the reference (`statestream.stats.reference`) computed from the pairs on machine.out, in
partition order, which keeps each series' order."""

from __future__ import annotations

import json

from statestream.config import Settings
from statestream.exactly_once.read import iter_records, read_records
from statestream.queries.definition import QueryCheck
from statestream.queries.stats.job import stats_spec
from statestream.stats import component_pattern
from statestream.stats.reference import latest_results, power_frame, reference_statistics


def verify(settings: Settings) -> QueryCheck:
    """Levels and duty cycles per window on the statistics topic against the reference."""
    power = component_pattern(settings.stats.power_quantity)
    pairs = (json.loads(v) for (_, _, v), _ in iter_records(settings, settings.topics.machine_out))
    frame = power_frame(pair for pair in pairs if power.match(pair["quantity"]))
    expected = reference_statistics(frame, stats_spec(settings))
    results = [v for _, _, v in read_records(settings, settings.topics.stats)]
    levels, duty = latest_results([json.loads(value) for value in results])
    want = {**_tagged("levels", expected.levels), **_tagged("duty", expected.duty)}
    got = {**_tagged("levels", levels), **_tagged("duty", duty)}
    return QueryCheck.of(want, got, results)


def _tagged(kind: str, windows: dict) -> dict[tuple, object]:
    return {(kind, *key): value for key, value in windows.items()}
