"""Turning parsed column/index specs into model Columns and Indexes (charsets, keys)."""
from __future__ import annotations

from dataclasses import replace

from ...errors import SchemaError
from ..model import (
    BLOB_CAPACITY, BLOB_TYPES, CHARACTER_TYPES, Catalog, Collations, Column, Index, TEXT_TYPES,
)
from .statements import ColumnSpec, IndexSpec


def table_defaults(st_charset: str | None, st_collation: str | None, schema: str,
                    cat: Catalog) -> tuple[str, str]:
    colls = cat.collations
    if st_charset is None and st_collation is None:
        return cat.database_defaults(schema)
    cs = colls.canonical_charset(st_charset) if st_charset else colls.charset_of(st_collation or "")
    if cs is None:
        raise SchemaError(f"unknown collation {st_collation}")
    coll = colls.canonical_collation(st_collation) if st_collation else colls.default_collation(cs)
    return cs, coll


def resolve_column(spec: ColumnSpec, table_cs: str, table_coll: str, colls: Collations) -> Column:
    """Column as the server stores it: charset from the table default, BINARY attribute, TEXT(n)."""
    t = spec.type
    cs = colls.canonical_charset(spec.charset) if spec.charset else None
    coll = colls.canonical_collation(spec.collation) if spec.collation else None
    if t in CHARACTER_TYPES:
        if coll and not cs:
            cs = colls.charset_of(coll)
        if cs == "binary":
            t = {"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
                 "mediumtext": "mediumblob", "longtext": "longblob"}.get(t, t)
            coll = "binary"
            if t not in CHARACTER_TYPES:  # a binary string type has no charset at all
                cs = coll = None
        elif cs is None:
            cs, coll = table_cs, coll or table_coll
        if cs is not None and cs != "binary":
            if spec.binary_attr:
                coll = colls.bin_collation(cs)
            elif coll is None:
                coll = colls.default_collation(cs)
    elif t in ("json",):
        cs, coll = "utf8mb4", "utf8mb4_bin"
    else:
        cs = coll = None
    if t in ("text", "blob") and spec.text_bytes is not None:
        need = spec.text_bytes * (colls.width(cs) if t == "text" else 1)
        size = next(n for n, cap in sorted(BLOB_CAPACITY.items()) if need <= cap or n == 4)
        t = ({v: k for k, v in TEXT_TYPES.items()} if t == "text"
             else {v: k for k, v in BLOB_TYPES.items()})[size]
    return Column(
        name=spec.name, type=t, length=spec.length, precision=spec.precision, scale=spec.scale,
        fsp=spec.fsp, unsigned=spec.unsigned, zerofill=spec.zerofill, charset=cs, collation=coll,
        values=spec.values, nullable=(spec.nullable if spec.nullable is not None
                                      else spec.inline_key != "primary"),
        generated=spec.generated, expression=spec.expression, invisible=spec.invisible,
        is_json=spec.json_check, auto_increment=spec.auto_increment)


def index_from_spec(ix: IndexSpec, existing: list[Index]) -> Index:
    name = ix.name
    if name is None:  # the server names an unnamed key after its first column, then _2, _3
        base = next((c for c in ix.columns if c is not None), "functional_index")
        taken = {i.name.lower() for i in existing}
        name, n = base, 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
    return Index(name, ix.kind, tuple(ix.columns), tuple(ix.prefixes))


def not_null_key_columns(cols: list[Column], index: Index) -> list[Column]:
    """PRIMARY KEY columns are NOT NULL whatever the definition said."""
    if index.kind != "primary":
        return cols
    names = {c.lower() for c in index.columns if c is not None}
    return [replace(c, nullable=False) if c.key in names else c for c in cols]


def implicit_period_columns() -> list[Column]:
    """MariaDB's row_start/row_end for WITH SYSTEM VERSIONING without a PERIOD."""
    start = Column("row_start", type="timestamp", fsp=6, nullable=False, invisible=True,
                   implicit=True, generated="row_start")
    return [start, replace(start, name="row_end", generated="row_end")]
