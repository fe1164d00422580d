"""MySQL/MariaDB column types -> Spark types, exactly, and JSON image text -> typed columns.

Exact means no value is silently changed: unsigned BIGINT needs DECIMAL(20,0), DECIMAL with
more than 38 digits cannot be a Spark decimal (it stays text), TIME spans +-838 hours (text),
DATETIME is wall-clock time (TIMESTAMP_NTZ) while TIMESTAMP is an instant (TIMESTAMP, UTC).
Zero dates ('0000-00-00', '2024-02-00') have no Spark value: the `zero_dates` policy says
whether they become NULL ("null"), keep their text in string columns ("string"), or fail
the batch ("error").

The table shapes themselves (`ColumnSpec`, `TableSpec`, read from the schema history, a
TABLE_MAP or information_schema) are Spark-free: `binlake.schema.spec`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from ..schema.spec import (
    BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, TEMPORAL_TYPES, ColumnSpec, TableSpec,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

ZERO_DATE_POLICIES = ("null", "string", "error")


def spark_schema(spec: TableSpec, zero_dates: str = "null",
                 columns: Iterable[str] | None = None) -> "StructType":
    """The Spark schema of a table's columns (all of them, or `columns` in that order)."""
    from pyspark.sql.types import StructField, StructType

    names = list(columns) if columns is not None else spec.names
    return StructType([StructField(n, spark_type(spec.column(n), zero_dates), True)
                       for n in names])


def spark_type(c: ColumnSpec, zero_dates: str = "null") -> "DataType":
    """The exact Spark type of a column's values (see the module notes)."""
    from pyspark.sql import types as st

    t = c.type
    if t in INTEGER_TYPES:
        signed = {"tinyint": st.ByteType(), "smallint": st.ShortType(),
                  "mediumint": st.IntegerType(), "int": st.IntegerType(), "bigint": st.LongType()}
        unsigned = {"tinyint": st.ShortType(), "smallint": st.IntegerType(),
                    "mediumint": st.IntegerType(), "int": st.LongType(),
                    "bigint": st.DecimalType(20, 0)}
        return (unsigned if c.unsigned else signed)[t]
    if t == "year":
        return st.ShortType()
    if t == "float":
        return st.FloatType()
    if t == "double":
        return st.DoubleType()
    if t == "decimal":
        p, s = c.precision or 10, c.scale or 0
        return st.DecimalType(p, s) if p <= 38 else st.StringType()
    if t == "bit":
        return st.LongType() if (c.precision or 64) < 64 else st.DecimalType(20, 0)
    if t in TEMPORAL_TYPES and zero_dates == "string":
        return st.StringType()
    if t == "date":
        return st.DateType()
    if t == "datetime":
        return st.TimestampNTZType()
    if t == "timestamp":
        return st.TimestampType()
    if t in BINARY_TYPES:
        return st.BinaryType()
    if t in GEOMETRY_TYPES:
        return st.StructType([st.StructField("srid", st.LongType()),
                              st.StructField("wkb", st.BinaryType())])
    if t == "vector":
        return st.ArrayType(st.FloatType())
    # char/varchar/text/enum/set, json (its text), time (+-838h), decimal > 38 digits, null,
    # MariaDB's uuid/inet6/inet4 (the server's text)
    return st.StringType()


def _raw_type(c: ColumnSpec) -> "DataType":
    """How `from_json` reads the image field before conversion: text, except nested values."""
    from pyspark.sql import types as st

    if c.type in GEOMETRY_TYPES:
        return st.StructType([st.StructField("srid", st.LongType()),
                              st.StructField("wkb", st.StringType())])
    if c.type == "vector":
        return st.ArrayType(st.FloatType())
    return st.StringType()


def image_schema(spec: TableSpec, columns: Iterable[str]) -> "StructType":
    """The `from_json` schema for a row image (every scalar read as its JSON text)."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(n, _raw_type(spec.column(n)), True) for n in columns])


def typed_value(raw: "Column", c: ColumnSpec, zero_dates: str = "null") -> "Column":
    """Convert one image field (JSON text) into the column's Spark type, exactly."""
    from pyspark.sql import functions as F

    target = spark_type(c, zero_dates)
    t = c.type
    if t in BINARY_TYPES:
        return F.unbase64(raw)
    if t in GEOMETRY_TYPES:
        return F.when(raw.isNotNull(), F.struct(raw.getField("srid").alias("srid"),
                                                F.unbase64(raw.getField("wkb")).alias("wkb")))
    if t == "vector":
        return raw
    if t in TEMPORAL_TYPES and zero_dates != "string":
        # ISO text ('T' separator; TIMESTAMP ends in 'Z') casts exactly; zero dates do not.
        return raw.cast(target) if zero_dates == "error" else raw.try_cast(target)
    if target.typeName() == "string":
        return raw
    return raw.cast(target)


def arrow_schema(schema: "StructType") -> pa.Schema:
    """The Arrow schema Spark reads `schema`'s rows from (timestamps as UTC instants)."""
    from pyspark.sql import types as st

    def conv(t: Any) -> pa.DataType:
        simple = {st.ByteType: pa.int8(), st.ShortType: pa.int16(), st.IntegerType: pa.int32(),
                  st.LongType: pa.int64(), st.FloatType: pa.float32(),
                  st.DoubleType: pa.float64(), st.StringType: pa.string(),
                  st.BinaryType: pa.binary(), st.DateType: pa.date32(),
                  st.TimestampNTZType: pa.timestamp("us"),
                  st.TimestampType: pa.timestamp("us", tz="UTC"), st.BooleanType: pa.bool_()}
        for k, v in simple.items():
            if type(t) is k:
                return v
        if isinstance(t, st.DecimalType):
            return pa.decimal128(t.precision, t.scale)
        if isinstance(t, st.StructType):
            return pa.struct([pa.field(f.name, conv(f.dataType)) for f in t.fields])
        if isinstance(t, st.ArrayType):
            return pa.list_(conv(t.elementType))
        raise TypeError(f"no Arrow type for the Spark type {t.simpleString()}")

    return pa.schema([pa.field(f.name, conv(f.dataType)) for f in schema.fields])
