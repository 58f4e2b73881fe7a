"""The examples in the docstrings of the join, statistics and ingestion cores and the testing
helpers run as written."""

import doctest
import importlib

import pytest

MODULES = [
    "statestream.bad_input",
    "statestream.chaos.schedule",
    "statestream.formats",
    "statestream.geo.cells",
    "statestream.geo.window_cells",
    "statestream.geo.windows",
    "statestream.ingest.envelope",
    "statestream.ingest.helsinki_network",
    "statestream.ingest.hfp",
    "statestream.ingest.machine_data",
    "statestream.ingest.mqtt.wire",
    "statestream.ingest.routes",
    "statestream.ingest.simulator",
    "statestream.ingest.vehicle_positions",
    "statestream.ingest.vehicle_simulator",
    "statestream.jobs.geo_decoding",
    "statestream.jobs.kafka_rows",
    "statestream.jobs.output_rows",
    "statestream.jobs.record_decoding",
    "statestream.jobs.status",
    "statestream.join.codec",
    "statestream.join.compiled",
    "statestream.join.engine",
    "statestream.join.keys",
    "statestream.join.name_index",
    "statestream.join.names",
    "statestream.join.router",
    "statestream.join.spec",
    "statestream.join.table_codec",
    "statestream.join.things",
    "statestream.json_lines",
    "statestream.json_numbers",
    "statestream.json_records",
    "statestream.stats.records",
    "statestream.stats.spec",
    "statestream.stats.windows",
    "statestream.testing",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
