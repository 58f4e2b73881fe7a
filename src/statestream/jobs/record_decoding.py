"""Kafka values of machine.data as machine records, whatever envelope the connector wrote.

`settings.ingest.envelope` says how the values are encoded (see `statestream.ingest.envelope`):

- `none`: plain record JSON, read with `from_json`;
- `json`: the `Event` envelope in protobuf's JSON mapping, read with `from_json`;
- `protobuf`: the `Event` envelope as protobuf binary. Spark's own `from_protobuf` needs the
  spark-protobuf jar, which the reachable Maven repository does not have for Spark 4.1, so a
  vectorised (Arrow) Python UDF decodes it with the protobuf runtime instead.

Each gives a struct column `r` (thing, quantity, phenomenonTime in ms, result; a field is null
when the value lacks it) and `raw`, the value as text (base64 for protobuf) for the dead-letter
record of a value that is not a complete record.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from statestream.jobs.records import MACHINE_RECORD_SCHEMA

JSON_ENVELOPE_SCHEMA = StructType(
    [
        StructField("eventTimeMs", LongType()),
        StructField("ingestionTimeMs", LongType()),
        StructField(
            "machineRecord",
            StructType(
                [
                    StructField("thing", StringType()),
                    StructField("quantity", StringType()),
                    StructField("result", DoubleType()),
                ]
            ),
        ),
    ]
)


def decoded_records(kafka_rows: DataFrame, envelope: str) -> DataFrame:
    """Rows of Spark's Kafka source → (r, raw, partition, offset), r a machine-record struct."""
    if envelope == "none":
        raw = F.col("value").cast("string")
        record = F.from_json(raw, MACHINE_RECORD_SCHEMA)
    elif envelope == "json":
        raw = F.col("value").cast("string")
        record = _json_envelope_record(F.from_json(raw, JSON_ENVELOPE_SCHEMA))
    elif envelope == "protobuf":
        raw = F.base64(F.col("value"))
        record = _decode_protobuf_events(F.col("value"))
    else:
        raise ValueError(f"unknown envelope {envelope!r}: none, json or protobuf")
    return kafka_rows.select(record.alias("r"), raw.alias("raw"), "partition", "offset")


def _json_envelope_record(event: Column) -> Column:
    details = event.getField("machineRecord")
    return F.struct(
        details.getField("thing").alias("thing"),
        details.getField("quantity").alias("quantity"),
        event.getField("eventTimeMs").cast("double").alias("phenomenonTime"),
        details.getField("result").alias("result"),
    )


@F.pandas_udf(MACHINE_RECORD_SCHEMA)  # type: ignore[call-overload]
def _decode_protobuf_events(values: pd.Series) -> pd.DataFrame:
    """Protobuf `Event` values → thing, quantity, phenomenonTime, result (nulls where missing)."""
    from statestream.ingest.envelope import decode_event_fields

    fields = list(zip(*(decode_event_fields(value) for value in values), strict=True)) or [
        (),
        (),
        (),
        (),
    ]
    things, quantities, times, results = fields
    return pd.DataFrame(
        {
            "thing": pd.Series(things, dtype=object),
            "quantity": pd.Series(quantities, dtype=object),
            "phenomenonTime": pd.array(times, dtype="Float64"),
            "result": pd.array(results, dtype="Float64"),
        }
    )
