"""Tables as the snapshot reads them: shape, chunk key, and how a key orders in Python."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Sequence

from ..schema.spec import INTEGER_TYPES, ColumnSpec, TableSpec
from .server import SnapshotError, query_rows, server_flavor

NO_KEY_POLICIES = ("full", "error")

_CHUNKABLE = frozenset({*INTEGER_TYPES, "year", "decimal", "float", "double", "date",
                        "datetime", "timestamp", "time", "char", "varchar", "binary",
                        "varbinary"})
"""Key types whose SQL range predicates order exactly as ORDER BY does (ENUM/SET/BIT do not)."""
_UNSUPPORTED = frozenset({"vector"})
"""Types whose SELECT text the snapshot cannot turn into what the binlog path writes."""



# -- table shapes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SnapshotTable:
    """A table as the snapshot reads it: its shape, its chunk key and how it is split."""

    schema: str
    table: str
    spec: TableSpec
    key: tuple[str, ...]
    """Chunk key columns (empty: no key, whole-table read)."""
    chunkable: bool
    """Key ranges can be expressed in SQL (otherwise one chunk covers the whole table)."""
    signature: tuple[tuple[Any, ...], ...] = ()
    """(name, type, charset) of every column at planning: each chunk checks it is unchanged."""
    mariadb: bool = False
    """MariaDB keeps JSON as the text written; MySQL's binlog carries a parsed document."""
    model: Any = field(default=None, compare=False, repr=False)
    """The table's `TableDef` at planning (information_schema, as the schema history reads
    it): fills what a TABLE_MAP without FULL metadata lacks during the backfill."""
    collations: Any = field(default=None, compare=False, repr=False)

    @property
    def kinds(self) -> tuple[str | None, ...]:
        return tuple(order_kind(self.spec.column(k)) for k in self.key)

    @property
    def ordered(self) -> bool:
        """Key order can be decided in Python (backfill range filter, `covered`)."""
        return bool(self.key) and all(k is not None for k in self.kinds)

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"


def describe_table(cur: Any, schema: str, table: str, key: Sequence[str] | None = None,
                   no_key: str = "full") -> SnapshotTable:
    """Shape and chunk key of one table, checked for everything an exact snapshot needs."""
    from ..schema.bootstrap import read_catalog

    cat = read_catalog(cur, only=[(schema, table)], tables=lambda s, t: True)
    td = cat.tables.get(cat.key(schema, table))
    if td is None:
        raise SnapshotError(f"table {schema}.{table} does not exist (or is not a base table)")
    if td.system_versioned or td.kind != "table":
        raise SnapshotError(f"{schema}.{table} is a system-versioned table or a sequence: "
                            "not supported by the snapshot")
    bad = [f"{c.name} ({c.type})" for c in td.columns if c.type in _UNSUPPORTED]
    if bad:
        raise SnapshotError(f"{schema}.{table}: column types the snapshot cannot read exactly: "
                            f"{', '.join(bad)}")
    engine = query_rows(cur, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                        "AND TABLE_NAME = %s", (schema, table))
    if not engine or str(engine[0][0]).lower() != "innodb":
        raise SnapshotError(f"{schema}.{table} uses engine {engine[0][0] if engine else '?'}; "
                            "a consistent snapshot needs InnoDB")
    spec = TableSpec.from_table_def(td)
    if key:
        chosen = tuple(key)
        by_name = {c.name.lower(): c for c in td.columns}
        missing = [k for k in chosen if k.lower() not in by_name]
        if missing:
            raise SnapshotError(f"{schema}.{table}: key columns {missing} do not exist")
        chosen = tuple(by_name[k.lower()].name for k in chosen)
        unique = [ix for ix in td.indexes if ix.is_unique and all(p is None for p in ix.prefixes)
                  and set(c.lower() for c in ix.columns if c) == {k.lower() for k in chosen}
                  and len(ix.columns) == len(chosen)]
        if not unique:
            raise SnapshotError(f"{schema}.{table}: {list(chosen)} is not the primary key nor a "
                                "UNIQUE index (without prefixes) of the table",
                                hint="a chunk key must identify rows")
        nullable = [k for k in chosen if by_name[k.lower()].nullable]
        if nullable:
            raise SnapshotError(f"{schema}.{table}: key columns {nullable} allow NULL",
                                hint="a chunk key must be NOT NULL")
    else:
        primary = [ix for ix in td.indexes if ix.kind == "primary"]
        if primary and all(p is None for p in primary[0].prefixes):
            chosen = tuple(c for c in primary[0].columns if c)
        else:
            chosen = ()
    if not chosen:
        if no_key not in NO_KEY_POLICIES:
            raise SnapshotError(f"noKeyPolicy must be one of {NO_KEY_POLICIES}, not {no_key!r}")
        if no_key == "error":
            raise SnapshotError(f"{schema}.{table} has no primary key",
                                hint='choose a unique NOT NULL key (option "keys") or allow the '
                                     'whole-table read (noKeyPolicy "full")')
        return SnapshotTable(td.schema, td.name, spec, (), False,
                             column_signature(cur, schema, table), server_flavor(cur) == "mariadb",
                             td, cat.collations)
    types = [spec.column(k).type for k in chosen]
    return SnapshotTable(td.schema, td.name, spec, chosen, all(t in _CHUNKABLE for t in types),
                         column_signature(cur, schema, table), server_flavor(cur) == "mariadb",
                         td, cat.collations)


def column_signature(cur: Any, schema: str, table: str) -> tuple[tuple[Any, ...], ...]:
    """What formatting relies on: column names, full types and charsets, in order."""
    return tuple(tuple(r) for r in query_rows(
        cur, "SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
             "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (schema, table)))


def order_kind(col: ColumnSpec) -> str | None:
    """How a key column's JSON value orders like the server orders the column (None: it does
    not in Python, e.g. text under a collation)."""
    t = col.type
    if t in INTEGER_TYPES or t in ("year", "double", "float"):
        return "number"
    if t == "decimal":
        return "decimal"
    if t in ("date", "datetime", "timestamp"):
        return "text"  # fixed-width ISO text per column (zero dates first, as on the server)
    if t in ("binary", "varbinary"):
        return "binary"
    return None


KEY_ORDER: dict[str, Callable[[Any], Any]] = {
    "number": lambda v: v, "decimal": Decimal, "text": str, "binary": base64.b64decode,
}
