"""The processors' state variables, given as types, keep the layout Spark parsed from their DDL.

A DDL string costs a round trip to the JVM's SQL parser in every task, so the schemas are types;
the layout is part of a checkpoint, so it must stay what older checkpoints were written with.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import _parse_datatype_string

from statestream.queries.bunching.processor import VALUE_STATE
from statestream.queries.geo.processor import MAP_STATE as GEO_MAP_STATE
from statestream.queries.stats.processor import MAP_STATE as STATS_MAP_STATE
from statestream.spark.stored_engines import MAP_STATE as JOIN_MAP_STATE

# each state variable: name, then the DDL its schemas had before they were types
AS_DDL = [
    (JOIN_MAP_STATE, ("things", "thing string", "engines binary")),
    (STATS_MAP_STATE, ("windows", "thing string, component string", "state binary")),
    (GEO_MAP_STATE, ("windows", "start long", "cells binary")),
    (VALUE_STATE, ("line", "state binary")),
]


@pytest.mark.parametrize(("variable", "ddl"), AS_DDL, ids=["join", "stats", "geo", "bunching"])
def test_state_schemas_are_what_spark_parses_from_their_ddl(
    spark: SparkSession, variable: tuple, ddl: tuple[str, ...]
) -> None:
    name, *schemas = variable
    assert name == ddl[0]
    assert [s.json() for s in schemas] == [_parse_datatype_string(d).json() for d in ddl[1:]]
