"""Delta table helpers shared by the apply step and schema evolution: SQL names, the tables
this process knows, seq literals, and one table's apply plan (keys and selected columns).

A module of its own so that `evolve` uses public names instead of `apply`'s internals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import BinlakeError
from ..schema.spec import TableSpec
from .typing import spark_schema

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import StructType

    from .apply import TableOptions
SEQ_COL = "_binlake_seq"
TS_COL = "_binlake_ts"
START_AT = "__START_AT"
END_AT = "__END_AT"
ROW_OPS = ("insert", "update", "delete")


class ApplyError(BinlakeError):
    """A batch cannot be applied (unknown table shape, no key, incompatible target)."""


def table_path(target: str, schema: str, table: str) -> str:
    return f"{target.rstrip('/')}/{schema}/{table}"


def tombstone_path(target: str, schema: str, table: str) -> str:
    return f"{target.rstrip('/')}/_binlake/tombstones/{schema}/{table}"


def quote_name(name: str) -> str:
    """A SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def delta_ref(path: str) -> str:
    """The SQL name of the Delta table at `path`."""
    return f"delta.{quote_name(path)}"


KNOWN: dict[str, set[str]] = {}
"""Column names of Delta tables this process created or checked (skips a snapshot read)."""


def is_delta(spark: "SparkSession", path: str) -> bool:
    """Whether `path` holds a Delta table (known ones without asking Delta)."""
    if path in KNOWN:
        return True
    jvm = spark._jvm  # type: ignore[attr-defined]
    return bool(jvm.io.delta.tables.DeltaTable.isDeltaTable(spark._jsparkSession, path))  # type: ignore[attr-defined]


def create_empty(spark: "SparkSession", path: str, schema: "StructType",
                 properties: Mapping[str, str] | None = None) -> None:
    """Create an empty Delta table at `path` with `properties`, unless one is there: one
    metadata commit, no Spark job writing an empty file (which queued behind a snapshot's
    running tasks)."""
    from delta.tables import DeltaTable

    builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
    for key, value in (properties or {}).items():
        builder = builder.property(key, value)
    builder.execute()


def seq_sql(seq: Sequence[int]) -> str:
    """A seq (file_index, pos, inner, row) as a SQL struct literal."""
    fi, pos, inner, row = seq
    return (f"named_struct('file_index', CAST({fi} AS INT), 'pos', CAST({pos} AS BIGINT), "
            f"'inner', CAST({inner} AS INT), 'row', CAST({row} AS INT))")


def seq_lit(seq: Sequence[int]) -> "Column":
    """A seq as a Spark column literal."""
    from pyspark.sql import functions as F

    return F.expr(seq_sql(seq))


@dataclass
class Plan:
    """Names of one table's apply: source key/data columns and their internal names."""

    spec: TableSpec
    keys: list[str]
    cols: list[str]
    tracked: list[str]

    @property
    def K(self) -> list[str]:
        return [f"_k{j}" for j in range(len(self.keys))]

    def key_index(self, name: str) -> int | None:
        return self.keys.index(name) if name in self.keys else None


def plan_table(spec: TableSpec, opts: "TableOptions") -> Plan:
    """The merge keys and the selected columns of one table under its options."""
    keys = list(opts.keys or spec.primary_key)
    if not keys:
        raise ApplyError(f"{spec.schema}.{spec.table} has no primary key",
                         hint="configure TableOptions(keys=...) or use the change log only")
    names = spec.names
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise ApplyError(f"{spec.schema}.{spec.table}: key columns {unknown} do not exist")
    cols = [c for c in names
            if (c in keys or opts.columns is None or c in opts.columns)
            and (c in keys or c not in opts.except_columns)]
    base = [c for c in cols if c not in keys]
    tracked = [c for c in (opts.track_history or base)
               if c in base and c not in opts.track_history_except]
    return Plan(spec, keys, cols, tracked)


def target_schema(spec: TableSpec, plan: Plan, opts: "TableOptions", seq_type: Any,
                  zero_dates: str) -> "StructType":
    """The Delta table's columns: the selected source columns, then the SCD columns."""
    from pyspark.sql.types import StructField, StructType, TimestampType

    data = spark_schema(spec, zero_dates, plan.cols).fields
    if opts.scd_type == 2:
        return StructType([*data, StructField(START_AT, seq_type), StructField(END_AT, seq_type)])
    if opts.scd_type == 1:
        return StructType([*data, StructField(SEQ_COL, seq_type),
                           StructField(TS_COL, TimestampType())])
    raise ApplyError(f"scd_type must be 1 or 2, not {opts.scd_type}")
