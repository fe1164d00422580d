"""TABLE_MAP events: the column layout every following rows event is decoded with.

The binlog only guarantees column *types* and their type metadata. Names, signedness,
charsets, ENUM/SET strings and keys arrive as optional metadata (binlog_row_metadata=FULL)
or must come from binlake's schema history; `ColumnInfo` holds whatever is known and says
so (None = unknown), and a schema resolver may fill the gaps before rows are decoded.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

from ..errors import DecodeError
from .constants import ColumnType
from .events import Event, EventBase
from .header import EventHeader
from .makers import slot_maker
from .wire import bitmap_bits, bitmap_bits_msb, need, packed_int, raw, text, uint_n

T = ColumnType

NUMERIC_TYPES = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.FLOAT, T.DOUBLE,
                           T.NEWDECIMAL})
BLOB_TYPES = frozenset({T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
# Columns that the charset metadata fields enumerate. The servers differ: MySQL counts
# VECTOR, MariaDB counts GEOMETRY (its geometry class derives from BLOB).
CHARACTER_TYPES_MYSQL = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.VECTOR}) | BLOB_TYPES
CHARACTER_TYPES_MARIADB = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.GEOMETRY}) | BLOB_TYPES

# Optional metadata field codes (binlog_row_metadata)
OM_SIGNEDNESS = 1
OM_DEFAULT_CHARSET = 2
OM_COLUMN_CHARSET = 3
OM_COLUMN_NAME = 4
OM_SET_STR_VALUE = 5
OM_ENUM_STR_VALUE = 6
OM_GEOMETRY_TYPE = 7
OM_SIMPLE_PRIMARY_KEY = 8
OM_PRIMARY_KEY_WITH_PREFIX = 9
OM_ENUM_AND_SET_DEFAULT_CHARSET = 10
OM_ENUM_AND_SET_COLUMN_CHARSET = 11
OM_COLUMN_VISIBILITY = 12
OM_VECTOR_DIMENSIONALITY = 13

BINARY_COLLATION = 63


@dataclass(slots=True)
class ColumnInfo:
    """One column as binlake knows it at one binlog position."""

    index: int
    type: int
    """Real type: STRING columns whose metadata says ENUM/SET become ENUM/SET here."""
    binlog_type: int
    """The type byte exactly as written in the TABLE_MAP."""
    meta: int
    nullable: bool
    name: str | None = None
    unsigned: bool | None = None
    collation: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    visible: bool | None = None
    vector_dimensions: int | None = None
    is_json: bool = False
    """MariaDB writes JSON as LONGTEXT; the schema history marks it so output stays JSON."""
    plugin_type: str | None = None
    """uuid | inet6 | inet4: a MariaDB type the binlog carries as BINARY(n) and only the
    schema history names; its values are decoded to the server's text (columns/fixedbin.py)."""

    # Derived from type metadata -----------------------------------------------------------
    @property
    def fsp(self) -> int:
        if self.type in (T.TIME2, T.DATETIME2, T.TIMESTAMP2):
            return self.meta
        return 0

    @property
    def precision(self) -> int:
        return self.meta >> 8 if self.type == T.NEWDECIMAL else 0

    @property
    def scale(self) -> int:
        return self.meta & 0xFF if self.type == T.NEWDECIMAL else 0

    @property
    def is_binary(self) -> bool:
        return self.collation == BINARY_COLLATION

    @property
    def type_name(self) -> str:
        return T(self.type).name if self.type in T._value2member_map_ else f"TYPE_{self.type}"


@dataclass(slots=True, kw_only=True)
class TableMapEvent(Event):
    """TABLE_MAP: the table id, schema, name and column types (with optional metadata)
    that the rows events after it refer to."""

    table_id: int
    flags: int
    schema: str
    table: str
    columns: list[ColumnInfo]
    primary_key: tuple[int, ...] | None = None
    """Column indexes of the primary key, when the TABLE_MAP metadata names them."""
    primary_key_prefixes: tuple[int, ...] | None = None
    has_optional_metadata: bool = False
    row_decoders: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    """Compiled row decoders keyed by the column-presence bitmap, and the other per-table caches
    of their users (column names, JSON formatters, record constants); filled lazily."""

    @property
    def column_names(self) -> list[str]:
        names = self.row_decoders.get("column-names")  # read for every rows event: cached
        if names is None:
            names = self.row_decoders["column-names"] = tuple(
                c.name if c.name is not None else f"@{c.index + 1}" for c in self.columns)
        return list(names)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.table}"

    def moved(self, header: EventHeader, file: str | None, offset: int, end: int) -> "TableMapEvent":
        """The same map met again at another place: a copy sharing its parse and compiled
        decoders. Why a slot maker, not dataclasses.replace or the class: both run Python
        per field, and this runs for every TABLE_MAP of a busy binlog (one per transaction
        and table)."""
        return _make_table_map(header, file, offset, end, self.inner_index, self.table_id,
                               self.flags, self.schema, self.table, self.columns,
                               self.primary_key, self.primary_key_prefixes,
                               self.has_optional_metadata, self.row_decoders)

    def renumbered(self, table_id: int, header: EventHeader, file: str | None, offset: int,
                   end: int) -> "TableMapEvent":
        """The same map under another table id (the server opened the table again), met at
        another place: a copy sharing its parse and compiled decoders, which depend on the
        bytes after the id alone."""
        return _make_table_map(header, file, offset, end, self.inner_index, table_id,
                               self.flags, self.schema, self.table, self.columns,
                               self.primary_key, self.primary_key_prefixes,
                               self.has_optional_metadata, self.row_decoders)

    def with_columns(self, columns: list[ColumnInfo], primary_key: tuple[int, ...] | None,
                     row_decoders: dict[Any, Any] | None = None) -> "TableMapEvent":
        """A copy with columns filled in by a schema resolver: a fresh decoder cache, or
        `row_decoders`, the cache of an earlier copy of the same table with these same
        columns and key (what it compiled fits them)."""
        return _make_table_map(self.header, self.file, self.offset, self.end, self.inner_index,
                               self.table_id, self.flags, self.schema, self.table, columns,
                               primary_key, self.primary_key_prefixes,
                               self.has_optional_metadata,
                               {} if row_decoders is None else row_decoders)

    def summary(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id, "schema": self.schema, "table": self.table,
            "columns": [
                {k: v for k, v in (
                    ("name", c.name), ("type", c.type_name), ("meta", c.meta),
                    ("nullable", c.nullable), ("unsigned", c.unsigned),
                    ("collation", c.collation), ("enum", c.enum_values), ("set", c.set_values),
                    ("geometry_type", c.geometry_type), ("visible", c.visible),
                    ("vector_dimensions", c.vector_dimensions),
                ) if v is not None}
                for c in self.columns
            ],
            "primary_key": list(self.primary_key) if self.primary_key is not None else None,
        }


_TABLE_MAP_FIELDS = ("header", "file", "offset", "end", "inner_index", "table_id", "flags",
                     "schema", "table", "columns", "primary_key", "primary_key_prefixes",
                     "has_optional_metadata", "row_decoders")
if tuple(f.name for f in fields(TableMapEvent)) != _TABLE_MAP_FIELDS:  # pragma: no cover
    raise ImportError("TableMapEvent's fields changed: update _TABLE_MAP_FIELDS and its users")
_make_table_map: Callable[[EventHeader, str | None, int, int, int | None, int, int, str, str,
                           list[ColumnInfo], tuple[int, ...] | None, tuple[int, ...] | None,
                           bool, dict[Any, Any]], TableMapEvent] = slot_maker(TableMapEvent)
"""Every field positionally, in _TABLE_MAP_FIELDS order."""


def _read_meta(types: bytes, buf: memoryview, pos: int, end: int) -> list[int]:
    """Per-column type metadata: 0, 1 or 2 bytes depending on the type."""
    metas = []
    for t in types:
        if t in (T.FLOAT, T.DOUBLE, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB,
                 T.GEOMETRY, T.JSON, T.VECTOR, T.TIME2, T.DATETIME2, T.TIMESTAMP2):
            need(buf, pos, 1, "column metadata")
            metas.append(buf[pos])
            pos += 1
        elif t in (T.VARCHAR, T.VAR_STRING, T.BIT):
            need(buf, pos, 2, "column metadata")
            if t == T.BIT:
                # byte 0: bits % 8, byte 1: bits // 8 -> keep as (bytes << 8) | bits
                metas.append((buf[pos + 1] << 8) | buf[pos])
            else:
                metas.append(buf[pos] | (buf[pos + 1] << 8))
            pos += 2
        elif t in (T.NEWDECIMAL, T.STRING, T.ENUM, T.SET):
            need(buf, pos, 2, "column metadata")
            metas.append((buf[pos] << 8) | buf[pos + 1])
            pos += 2
        else:
            metas.append(0)
    if pos != end:
        raise DecodeError(f"column metadata length mismatch: parsed {pos}, block ends at {end}")
    return metas


def _real_string_type(meta: int) -> tuple[int, int]:
    """STRING metadata packs the real type (ENUM/SET/STRING) and the max byte length."""
    b0, b1 = meta >> 8, meta & 0xFF
    if (b0 & 0x30) != 0x30:  # CHAR longer than 255 bytes borrows two bits of the type byte
        return T.STRING, b1 | (((b0 & 0x30) ^ 0x30) << 4)
    if b0 in (T.ENUM, T.SET):
        return b0, b1
    return T.STRING, b1


def decode_table_map(body: memoryview, base: EventBase, post_header_len: int,
                     mariadb: bool = False) -> TableMapEvent:
    pos = 0
    id_len = 4 if post_header_len == 6 else 6
    table_id, pos = uint_n(body, pos, id_len, "table id")
    flags, pos = uint_n(body, pos, 2, "table map flags")
    pos = post_header_len if post_header_len > id_len + 2 else pos
    n, pos = uint_n(body, pos, 1, "schema name length")
    schema_b, pos = raw(body, pos, n + 1, "schema name")
    n, pos = uint_n(body, pos, 1, "table name length")
    table_b, pos = raw(body, pos, n + 1, "table name")
    ncols, pos = packed_int(body, pos)
    types, pos = raw(body, pos, ncols, "column types")
    meta_len, pos = packed_int(body, pos)
    need(body, pos, meta_len, "column metadata")
    metas = _read_meta(types, body, pos, pos + meta_len)
    pos += meta_len
    nullbits, pos = raw(body, pos, (ncols + 7) // 8, "null bitmap")
    nullable = bitmap_bits(nullbits, ncols)

    columns = []
    for i in range(ncols):
        t, m = types[i], metas[i]
        real = t
        if t == T.STRING:
            real, _ = _real_string_type(m)
        columns.append(ColumnInfo(index=i, type=real, binlog_type=t, meta=m, nullable=nullable[i]))
    ev = TableMapEvent(**base, table_id=table_id, flags=flags, schema=text(schema_b[:-1]),
                       table=text(table_b[:-1]), columns=columns)
    if pos < len(body):
        _apply_optional_metadata(ev, body, pos, mariadb)
    return ev


def _apply_optional_metadata(ev: TableMapEvent, buf: memoryview, pos: int, mariadb: bool) -> None:
    cols = ev.columns
    # MariaDB's signedness bitmap also has a bit for YEAR columns; MySQL's does not.
    numeric_types = NUMERIC_TYPES | {T.YEAR} if mariadb else NUMERIC_TYPES
    numeric = [c for c in cols if c.type in numeric_types]
    char_types = CHARACTER_TYPES_MARIADB if mariadb else CHARACTER_TYPES_MYSQL
    character = [c for c in cols if c.type in char_types]
    enum_set = [c for c in cols if c.type in (T.ENUM, T.SET)]
    enums = [c for c in cols if c.type == T.ENUM]
    sets = [c for c in cols if c.type == T.SET]
    geoms = [c for c in cols if c.type == T.GEOMETRY]
    vectors = [c for c in cols if c.type == T.VECTOR]
    ev.has_optional_metadata = True
    raw_labels: dict[int, list[bytes]] = {}
    while pos < len(buf):
        kind = buf[pos]
        length, pos = packed_int(buf, pos + 1)
        need(buf, pos, length, f"optional metadata field {kind}")
        end = pos + length
        field_buf = buf[pos:end]
        if kind == OM_SIGNEDNESS:
            for c, bit in zip(numeric, bitmap_bits_msb(field_buf, len(numeric))):
                c.unsigned = bit
        elif kind in (OM_DEFAULT_CHARSET, OM_ENUM_AND_SET_DEFAULT_CHARSET):
            targets = character if kind == OM_DEFAULT_CHARSET else enum_set
            default, p = packed_int(field_buf, 0)
            for c in targets:
                c.collation = default
            while p < len(field_buf):
                idx, p = packed_int(field_buf, p)
                coll, p = packed_int(field_buf, p)
                if idx >= len(targets):
                    raise DecodeError(f"charset override for column #{idx} of {len(targets)}")
                targets[idx].collation = coll
        elif kind in (OM_COLUMN_CHARSET, OM_ENUM_AND_SET_COLUMN_CHARSET):
            targets = character if kind == OM_COLUMN_CHARSET else enum_set
            ids, p = [], 0
            while p < len(field_buf):
                coll, p = packed_int(field_buf, p)
                ids.append(coll)
            if len(ids) == len(cols) != len(targets):
                # One entry per column (Dolt), not per character column (MySQL): matched by
                # index; a non-character column's entry (0) says nothing.
                wanted = {c.index for c in targets}
                for c, coll in zip(cols, ids):
                    if c.index in wanted:
                        c.collation = coll
            else:
                if len(ids) < len(targets):
                    raise DecodeError(f"{ev.qualified_name}: column charset metadata has {len(ids)} "
                                      f"entries for {len(targets)} columns")
                for c, coll in zip(targets, ids):
                    c.collation = coll
        elif kind == OM_COLUMN_NAME:
            p = 0
            for c in cols:
                name, p = _packed_str(field_buf, p)
                c.name = name
        elif kind in (OM_SET_STR_VALUE, OM_ENUM_STR_VALUE):
            targets = sets if kind == OM_SET_STR_VALUE else enums
            p = 0
            for c in targets:
                count, p = packed_int(field_buf, p)
                values = []
                for _ in range(count):
                    v, p = _packed_str(field_buf, p, raw_bytes=True)
                    values.append(v)
                raw_labels[c.index] = values
        elif kind == OM_GEOMETRY_TYPE:
            p = 0
            for c in geoms:
                c.geometry_type, p = packed_int(field_buf, p)
        elif kind == OM_SIMPLE_PRIMARY_KEY:
            p, keys = 0, []
            while p < len(field_buf):
                k, p = packed_int(field_buf, p)
                keys.append(k)
            ev.primary_key = tuple(keys)
        elif kind == OM_PRIMARY_KEY_WITH_PREFIX:
            p, keys, prefixes = 0, [], []
            while p < len(field_buf):
                k, p = packed_int(field_buf, p)
                pl, p = packed_int(field_buf, p)
                keys.append(k)
                prefixes.append(pl)
            ev.primary_key = tuple(keys)
            ev.primary_key_prefixes = tuple(prefixes)
        elif kind == OM_COLUMN_VISIBILITY:
            for c, bit in zip(cols, bitmap_bits_msb(field_buf, len(cols))):
                c.visible = bit
        elif kind == OM_VECTOR_DIMENSIONALITY:
            p = 0
            for c in vectors:
                c.vector_dimensions, p = packed_int(field_buf, p)
        # Unknown field codes are skipped by length: the TLV layout exists so that old
        # readers can step over metadata that newer servers add, and none of it is row data.
        pos = end
    if ev.primary_key is not None and any(k >= len(cols) for k in ev.primary_key):
        raise DecodeError(f"primary key column index out of range in {ev.qualified_name}")
    # Labels are decoded last: their charset field (10/11) follows the label fields (5/6).
    for idx, values in raw_labels.items():
        c = cols[idx]
        labels = tuple(_decode_label(v, c.collation) for v in values)
        if c.type == T.SET:
            c.set_values = labels
        else:
            c.enum_values = labels


def _packed_str(buf: memoryview, pos: int, raw_bytes: bool = False) -> tuple[Any, int]:
    n, pos = packed_int(buf, pos)
    data, pos = raw(buf, pos, n, "metadata string")
    return (data if raw_bytes else text(data)), pos


def _decode_label(value: bytes, collation: int | None) -> str:
    from .columns.charsets import decode_text

    return decode_text(value, collation)
