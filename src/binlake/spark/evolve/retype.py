"""Retype rules: Delta type widening, and converting existing values as MariaDB does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tables import ApplyError, quote_name
from ...schema.spec import ColumnSpec
from .steps import DdlStep

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import DataType


def widens(have: "DataType", want: "DataType") -> bool:
    """Delta 4 type widening: byte/short/int -> wider int, decimal, double; long -> decimal;
    float -> double; decimal -> decimal(p + k1, s + k2) with k1 >= k2 >= 0; date -> ts_ntz."""
    from pyspark.sql import types as T

    order = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
    digits = {T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}
    h, w = type(have), type(want)
    if h in order and w in order:
        return order[w] > order[h]
    if h in order and w is T.DoubleType:
        return h is not T.LongType
    if h in order and w is T.DecimalType:
        return want.precision - want.scale >= digits[h]
    if h is T.FloatType and w is T.DoubleType:
        return True
    if h is T.DecimalType and w is T.DecimalType:
        k1, k2 = want.precision - have.precision, want.scale - have.scale
        return k1 >= k2 >= 0
    return h is T.DateType and w is T.TimestampNTZType


def retype_conversion(have: "DataType", want: "DataType", before: ColumnSpec | None,
                      after: ColumnSpec) -> dict[str, Any] | None:
    """How to convert existing values like MariaDB does, or None when binlake cannot."""
    from pyspark.sql import types as T

    exact = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)
    floating = (T.FloatType, T.DoubleType)
    to = want.simpleString()
    if before is not None and before.type in ("enum", "set", "bit") and before.type != after.type:
        return None  # ENUM/SET convert to their index or bits, BIT to its bytes
    if after.type == "year" and (before is None or before.type != "year"):
        return None  # two-digit years
    if isinstance(have, T.TimestampType) or isinstance(want, T.TimestampType):
        return None  # needs the session time zone of the statement
    if isinstance(have, exact) and isinstance(want, exact):
        rounds = isinstance(have, T.DecimalType) and have.scale > 0 and (
            not isinstance(want, T.DecimalType) or want.scale < have.scale)
        return {"how": "round" if rounds else "cast", "to": to,
                "scale": want.scale if isinstance(want, T.DecimalType) else 0}
    if isinstance(have, exact + floating) and isinstance(want, floating):
        return {"how": "cast", "to": to}
    if isinstance(want, T.StringType):
        if isinstance(have, exact) or isinstance(have, T.DateType):
            return {"how": "cast", "to": to}
        if isinstance(have, T.TimestampNTZType) and before is not None:
            return {"how": "format", "to": to, "fsp": before.fsp}
        return None  # floating point text differs; bytes need their charset
    if isinstance(have, T.StringType) and before is not None and before.type in TEXT_SOURCES and \
            isinstance(want, exact + floating + (T.DateType, T.TimestampNTZType, T.BinaryType)):
        return {"how": "cast", "to": to}
    if isinstance(have, T.DateType) and isinstance(want, T.TimestampNTZType):
        return {"how": "cast", "to": to}
    return None


def converted_col(col: "Column", conv: dict[str, Any]) -> "Column":
    from pyspark.sql import functions as F

    if conv["how"] == "round":
        return F.round(col, conv["scale"]).try_cast(conv["to"])
    if conv["how"] == "format":
        fsp = int(conv["fsp"] or 0)
        return F.date_format(col, "yyyy-MM-dd HH:mm:ss" + ("." + "S" * fsp if fsp else ""))
    return col.try_cast(conv["to"])


def check_conversions(spark: "SparkSession", path: str, convs: dict[str, dict[str, Any]],
                       step: DdlStep) -> None:
    """Refuse (before writing) when an existing value would not convert."""
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(path)
    for name, conv in convs.items():
        c = F.col(quote_name(name))
        bad = df.where(c.isNotNull() & converted_col(c, conv).isNull()).select(c).limit(1).collect()
        if bad:
            raise ApplyError(f"{step.where}: column {name} holds {bad[0][0]!r}, which does not "
                             f"convert to {conv['to']}",
                             hint="MariaDB accepted it (non-strict mode?): re-snapshot the table")


TEXT_SOURCES = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "decimal")
"""Text columns whose values MariaDB converts to numbers/dates by reading them (not TIME,
JSON, ENUM, SET: those convert by other rules)."""
