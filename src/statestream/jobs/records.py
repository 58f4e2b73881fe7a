"""The Spark schema of a machine record on Kafka: `{thing, quantity, phenomenonTime, result}`."""

from pyspark.sql.types import DoubleType, StringType, StructField, StructType

MACHINE_RECORD_SCHEMA = StructType(
    [
        StructField("thing", StringType()),
        StructField("quantity", StringType()),
        StructField("phenomenonTime", DoubleType()),  # epoch ms; a fraction is allowed
        StructField("result", DoubleType()),
    ]
)
