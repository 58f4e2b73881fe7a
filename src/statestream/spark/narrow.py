"""Wide machine rows as narrow records: one row per (thing, time, quantity) that has a value.

>>> narrow = observations(wide, quantities=["actSpeed_C11", "vaTorque_C11"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from statestream.codecs.formats import WIDE_ROW_NON_QUANTITIES
from statestream.errors import SchemaError


def observations(
    wide_df: DataFrame,
    thing: str = "Thing",
    time: str = "Timestamp",
    quantities: Sequence[str] | None = None,
    keep: Sequence[str] = (),
) -> DataFrame:
    """`wide_df`'s rows (`Thing, Timestamp, q1, q2, …`) as records thing, quantity,
    phenomenonTime, result: one per quantity a row has a value of (a null is a quantity the
    machine did not measure, so it gives no record).

    `quantities` default to every numeric column but the thing, the time and `id`; `keep` names
    columns carried into each record, e.g. a row's arrival order for `complement_join(order=…)`.
    The time keeps its type; values become doubles.
    """
    types = {field.name: field.dataType for field in wide_df.schema.fields}
    for name in (thing, time, *keep, *(quantities or ())):
        if name not in types:
            raise SchemaError(
                f"column {name!r} is not in the wide DataFrame; its columns are {', '.join(types)}"
            )
    if quantities is None:
        skipped = {thing, time, *keep, *WIDE_ROW_NON_QUANTITIES}
        quantities = [
            name
            for name, data_type in types.items()
            if name not in skipped and isinstance(data_type, T.NumericType)
        ]
    for name in quantities:
        if not isinstance(types[name], T.NumericType):
            raise SchemaError(
                f"column {name!r} (a quantity) is {types[name].simpleString()}; it must be a number"
            )
    if not quantities:
        raise SchemaError("the wide DataFrame has no numeric quantity column")
    cells = F.array(
        *(
            F.struct(F.lit(name).alias("quantity"), F.col(name).cast("double").alias("result"))
            for name in quantities
        )
    )
    return (
        wide_df.select(
            F.col(thing).alias("thing"),
            F.col(time).alias("phenomenonTime"),
            *keep,
            F.explode(cells).alias("cell"),
        )
        .where(F.col("cell.result").isNotNull())
        .select(
            "thing",
            F.col("cell.quantity").alias("quantity"),
            "phenomenonTime",
            F.col("cell.result").alias("result"),
            *keep,
        )
    )
