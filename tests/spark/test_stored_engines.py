"""The MapState the join processors keep their engines in: its layout is part of a checkpoint."""

from __future__ import annotations

from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from statestream.spark.stored_engines import MAP_STATE


def test_the_map_state_keeps_the_layout_of_its_ddl_schemas() -> None:
    # given as types (a DDL string costs a round trip to the JVM's parser in every task), they
    # must stay what Spark parsed "thing string" and "engines binary" into for older checkpoints
    name, key, value = MAP_STATE
    assert name == "things"
    assert key == StructType([StructField("thing", StringType(), nullable=True)])
    assert value == StructType([StructField("engines", BinaryType(), nullable=True)])
    assert key.json() == (
        '{"fields":[{"metadata":{},"name":"thing","nullable":true,"type":"string"}],'
        '"type":"struct"}'
    )
