"""Applying parsed statements to a Catalog: `apply()` and the per-statement handlers."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..model import Catalog, Column, DatabaseDef, Index, TableDef
from .lexer import DdlParseError
from .statements import (
    AlterTable, CreateIndex, CreateSequence, CreateTable, DatabaseStmt, DropIndex, DropTables,
    Ignored, IndexSpec, RenameTables, Statement, TruncateTable,
)
from .context import ApplyContext, TableChange, UnknownTableError, table_key, require_table
from .resolve import (
    index_from_spec, not_null_key_columns, table_defaults, implicit_period_columns,
    resolve_column,
)
from .edit import TableEdit, apply_alter


def apply(stmt: Statement, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    """Apply one statement to `cat` in place (the caller passes a copy); returns table changes."""
    if isinstance(stmt, Ignored):
        return []
    handler = _HANDLERS[type(stmt)]
    return handler(stmt, cat, ctx)


def _apply_create(st: CreateTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    if st.temporary:
        return []  # row-based binlogs never carry rows of temporary tables
    key = table_key(st.table, cat, ctx)
    existed = key in cat.tables
    if existed and st.if_not_exists:
        return []
    if st.like is not None:
        src = require_table(cat, table_key(st.like, cat, ctx), ctx, st)
        if src is None:
            if ctx.tracked(*key):
                raise UnknownTableError(f"CREATE TABLE {st.table} LIKE {st.like}: source unknown")
            return []
        new = src.renamed(*key)
    else:
        if st.select and not st.columns:
            raise DdlParseError("CREATE TABLE ... SELECT without column definitions: the column "
                                "types come from the query", st.text)
        table_cs, table_coll = table_defaults(st.charset, st.collation, key[0], cat)
        cols = [resolve_column(c, table_cs, table_coll, cat.collations) for c in st.columns]
        indexes: list[Index] = []
        for spec, col in zip(st.columns, cols):
            if spec.inline_key:
                kind = spec.inline_key
                indexes.append(index_from_spec(IndexSpec(kind, "PRIMARY" if kind == "primary" else None,
                                                          [col.name], [None]), indexes))
        for ix in st.indexes:
            indexes.append(index_from_spec(ix, indexes))
        for index in indexes:
            cols = not_null_key_columns(cols, index)
        names = {c.key for c in cols}
        checks = [(n, c) for n, c in st.json_checks if c.lower() in names]
        if st.system_versioning and not any(c.generated == "row_start" for c in cols):
            cols += implicit_period_columns()
        indexes.sort(key=lambda i: 0 if i.kind == "primary" else 1)
        new = TableDef(key[0], key[1], tuple(cols), tuple(indexes), table_cs, table_coll,
                       system_versioned=st.system_versioning,
                       kind="sequence" if st.sequence else "table",
                       json_checks=tuple(checks))
    cat.tables[key] = new
    return [TableChange("create", key, new)]


def _apply_sequence(st: CreateSequence, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    if st.temporary:
        return []
    key = table_key(st.table, cat, ctx)
    if key in cat.tables and st.if_not_exists:
        return []
    big = Column("", type="bigint", nullable=False)
    value = big
    if st.value_type is not None:
        value = Column("", type=st.value_type.type, unsigned=st.value_type.unsigned, nullable=False)
    # the columns every MariaDB sequence table has (SHOW CREATE SEQUENCE ... as a table)
    cols = [replace(value, name=n) for n in
            ("next_not_cached_value", "minimum_value", "maximum_value", "start_value")]
    cols += [replace(big, name="increment"), replace(big, name="cache_size", unsigned=True),
             Column("cycle_option", type="tinyint", length=1, unsigned=True, nullable=False),
             replace(big, name="cycle_count")]
    new = TableDef(key[0], key[1], tuple(cols), kind="sequence")
    cat.tables[key] = new
    return [TableChange("create", key, new)]


def _apply_drop(st: DropTables, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    out = []
    for ref in st.tables:
        key = table_key(ref, cat, ctx)
        if key in cat.tables:  # an unknown table being dropped corrupts nothing
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
    return out


def _apply_rename(st: RenameTables, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    out = []
    for a, b in st.pairs:
        ka, kb = table_key(a, cat, ctx), table_key(b, cat, ctx)
        t = cat.tables.pop(ka, None)
        if t is None:
            if ctx.tracked(*ka) and not st.if_exists:
                raise UnknownTableError(f"RENAME TABLE {a}: table not in the schema history")
            if ctx.tracked(*kb):
                raise UnknownTableError(f"RENAME TABLE {a} TO {b}: source unknown, target tracked")
            continue
        new = t.renamed(*kb)
        cat.tables[kb] = new
        out.append(TableChange("rename", kb, new, old_key=ka))
    return out


def _apply_truncate(st: TruncateTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = table_key(st.table, cat, ctx)
    t = require_table(cat, key, ctx, st)
    return [] if t is None else [TableChange("truncate", key, t)]


def _apply_database(st: DatabaseStmt, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    name = cat.norm(st.name or ctx.default_schema)
    if st.action == "drop":
        cat.databases.pop(name, None)
        out = []
        for key in [k for k in cat.tables if k[0] == name]:
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
        return out
    if st.action == "create" and name in cat.databases and st.if_not_exists:
        return []
    out = []
    if st.action == "create" and st.or_replace:
        for key in [k for k in cat.tables if k[0] == name]:
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
    cs, coll = st.charset, st.collation
    if cs is None and coll is None:
        if st.action == "alter":
            return out
        cs = ctx.server_charset or cat.server_charset
    if cs is None and coll is not None:
        cs = cat.collations.charset_of(coll)
    elif cs is not None:
        cs = cat.collations.canonical_charset(cs)
        if coll is None:
            coll = cat.collations.default_collation(cs)
    cat.databases[name] = DatabaseDef(name, cs, coll)
    return out


def _apply_create_index(st: CreateIndex, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = table_key(st.table, cat, ctx)
    t = require_table(cat, key, ctx, st)
    if t is None:
        return []
    edit = TableEdit(t, cat, ctx)
    if st.or_replace:
        edit.drop_index(st.index.name or "", True)
    edit.add_index(st.index)
    new = edit.result()
    cat.tables[key] = new
    return [TableChange("alter", key, new)]


def _apply_drop_index(st: DropIndex, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = table_key(st.table, cat, ctx)
    t = require_table(cat, key, ctx, st)
    if t is None:
        return []
    edit = TableEdit(t, cat, ctx)
    edit.drop_index(st.name, st.if_exists)
    new = edit.result()
    cat.tables[key] = new
    return [TableChange("alter", key, new)]


_HANDLERS: dict[type, Callable[..., list[TableChange]]] = {
    CreateTable: _apply_create,
    CreateSequence: _apply_sequence,
    AlterTable: apply_alter,
    DropTables: _apply_drop,
    RenameTables: _apply_rename,
    TruncateTable: _apply_truncate,
    DatabaseStmt: _apply_database,
    CreateIndex: _apply_create_index,
    DropIndex: _apply_drop_index,
}
