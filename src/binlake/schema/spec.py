"""A table's shape as the pipeline types it: `ColumnSpec`/`TableSpec`, built alike from the
schema history (`TableSpec.from_table_def`), a TABLE_MAP with full metadata
(`from_table_map`) and information_schema (`read_table_spec`).

The types must describe the values the *binlog* carries (a BINARY charset makes CHAR/TEXT
binary; UUID/INET columns travel as bytes). No Spark here: `binlake.spark.typing` maps these
shapes to Spark types.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..binlog.constants import ColumnType as T
from ..binlog.table_map import TableMapEvent

INTEGER_TYPES = ("tinyint", "smallint", "mediumint", "int", "bigint")
TEXT_TYPES = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set")
BINARY_TYPES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
GEOMETRY_TYPES = ("geometry", "point", "linestring", "polygon", "multipoint",
                  "multilinestring", "multipolygon", "geometrycollection", "geomcollection")
TEMPORAL_TYPES = ("date", "datetime", "timestamp")
SERVER_TEXT_TYPES = ("uuid", "inet6", "inet4")
"""MariaDB's fixed-binary types, which binlake lands as the server's text form."""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column: MySQL type name (lower case, as information_schema.DATA_TYPE) + details.

    Only what decides the Spark type and the typing of image values: a projection that is
    built alike from a schema history `schema.model.Column`, a TABLE_MAP column (no history)
    and information_schema (snapshots), so the apply step types rows the same whichever
    source described the table."""

    name: str
    type: str
    unsigned: bool = False
    precision: int | None = None
    """DECIMAL digits, or BIT width."""
    scale: int | None = None
    fsp: int = 0
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A table's shape at one binlog position: ordered columns and the key columns."""

    schema: str
    table: str
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...] = ()
    _by_name: dict[str, ColumnSpec] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({c.name: c for c in self.columns})

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> ColumnSpec:
        return self._by_name[name]

    @classmethod
    def from_table_def(cls, td: Any) -> "TableSpec":
        """From the schema history's TableDef (binlake.schema.model), the hook for DDL."""
        cols = []
        for c in td.columns:
            kind = "json" if getattr(c, "is_json", False) else c.type
            if kind in TEXT_TYPES and str(c.charset or "").lower() == "binary":
                kind = {"char": "binary", "varchar": "varbinary"}.get(kind, "blob")
            precision = c.length if kind == "bit" else c.precision
            cols.append(ColumnSpec(c.name, kind, bool(c.unsigned), precision, c.scale,
                                   c.fsp or 0, bool(c.nullable)))
        return cls(td.schema, td.name, tuple(cols), tuple(td.primary_key or ()))

    @classmethod
    def from_table_map(cls, tm: TableMapEvent) -> "TableSpec":
        """From a TABLE_MAP; needs binlog_row_metadata=FULL for names, signedness, charsets."""
        cols = tuple(_column_from_binlog(name, c) for name, c in zip(tm.column_names, tm.columns))
        pk = tuple(cols[i].name for i in tm.primary_key) if tm.primary_key else ()
        return cls(tm.schema, tm.table, cols, pk)


def _column_from_binlog(name: str, c: Any) -> ColumnSpec:
    t, unsigned = c.type, bool(c.unsigned)
    simple = {T.TINY: "tinyint", T.SHORT: "smallint", T.INT24: "mediumint", T.LONG: "int",
              T.LONGLONG: "bigint", T.FLOAT: "float", T.DOUBLE: "double", T.YEAR: "year",
              T.DATE: "date", T.NEWDATE: "date", T.ENUM: "enum", T.SET: "set",
              T.JSON: "json", T.GEOMETRY: "geometry", T.VECTOR: "vector", T.NULL: "null"}
    binary = c.collation == 63
    if c.is_json:
        kind = "json"
    elif c.plugin_type:
        kind = c.plugin_type  # uuid, inet6, inet4: decoded to their text
    elif t in simple:
        kind = simple[t]
    elif t == T.NEWDECIMAL:
        return ColumnSpec(name, "decimal", unsigned, c.precision, c.scale, 0, c.nullable)
    elif t in (T.DATETIME, T.DATETIME2):
        return ColumnSpec(name, "datetime", fsp=c.fsp, nullable=c.nullable)
    elif t in (T.TIMESTAMP, T.TIMESTAMP2):
        return ColumnSpec(name, "timestamp", fsp=c.fsp, nullable=c.nullable)
    elif t in (T.TIME, T.TIME2):
        return ColumnSpec(name, "time", fsp=c.fsp, nullable=c.nullable)
    elif t == T.BIT:
        bits = (c.meta >> 8) * 8 + (c.meta & 0xFF)
        return ColumnSpec(name, "bit", precision=bits, nullable=c.nullable)
    elif t in (T.VARCHAR, T.VAR_STRING):
        kind = "varbinary" if binary else "varchar"
    elif t == T.STRING:
        kind = "binary" if binary else "char"
    elif t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        # Without charset metadata the decoder keeps BLOB/TEXT bytes: binary either way.
        kind = "text" if c.collation is not None and not binary else "blob"
    else:
        kind = c.type_name.lower()
    return ColumnSpec(name, kind, unsigned, nullable=c.nullable)


# -- information_schema ----------------------------------------------------------------------

_COLUMNS_SQL = (
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, "
    "DATETIME_PRECISION, IS_NULLABLE, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION")
_PK_SQL = (
    "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
    "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION")
_BIT_WIDTH = re.compile(r"bit\((\d+)\)")


def column_from_information_schema(row: tuple[Any, ...]) -> ColumnSpec:
    """One information_schema.COLUMNS row (in _COLUMNS_SQL's order) -> ColumnSpec."""
    name, data_type, column_type, prec, scale, dt_prec, nullable, charset = row
    data_type, column_type = str(data_type).lower(), str(column_type).lower()
    unsigned = "unsigned" in column_type
    is_null = str(nullable).upper() == "YES"
    if data_type == "decimal":
        return ColumnSpec(name, "decimal", unsigned, int(prec), int(scale or 0), 0, is_null)
    if data_type in ("datetime", "timestamp", "time"):
        return ColumnSpec(name, data_type, fsp=int(dt_prec or 0), nullable=is_null)
    if data_type == "bit":
        m = _BIT_WIDTH.search(column_type)
        return ColumnSpec(name, "bit", precision=int(m.group(1)) if m else 1, nullable=is_null)
    if data_type in TEXT_TYPES and str(charset or "").lower() == "binary":
        data_type = {"char": "binary", "varchar": "varbinary"}.get(data_type, "blob")
    return ColumnSpec(name, data_type, unsigned, nullable=is_null)


def read_table_spec(conn: Any, schema: str, table: str) -> TableSpec | None:
    """The table's current shape from information_schema (a DB-API connection), or None."""
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL, (schema, table))
        rows = cur.fetchall()
        if not rows:
            return None
        cur.execute(_PK_SQL, (schema, table))
        pk = tuple(r[0] for r in cur.fetchall())
    return TableSpec(schema, table, tuple(column_from_information_schema(tuple(r)) for r in rows), pk)


def specs_from_events(events: Iterable[Any]) -> dict[tuple[str, str], TableSpec]:
    """The last TABLE_MAP shape of every table in an event stream (driver-side helper)."""
    out: dict[tuple[str, str], TableSpec] = {}
    for ev in events:
        if isinstance(ev, TableMapEvent):
            out[(ev.schema, ev.table)] = TableSpec.from_table_map(ev)
    return out
