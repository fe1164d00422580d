"""Table shapes as binlake tracks them: immutable values that DDL replaces, never edits.

A `TableDef` is one table at one binlog position. Versions are shared between positions and
persisted as JSON, so everything here is a frozen dataclass of plain values. The module also
holds the two facts the decoder needs that only the model can answer: which collation *id* a
collation name has (TABLE_MAP metadata speaks ids, DDL speaks names) and which TABLE_MAP
type/metadata a column must have (the cross-check that turns schema drift into an error).

Columns are every column the server stores, in table order, because that is what TABLE_MAP
lists. Verified against MariaDB 10.11 (tests/integration/test_schema_history.py): VIRTUAL and
STORED generated columns, INVISIBLE columns and the implicit `row_start`/`row_end` of
`WITH SYSTEM VERSIONING` tables are all in the TABLE_MAP and carry values in FULL row images
(a MINIMAL row image leaves VIRTUAL values out). The implicit period columns are absent from
information_schema and SHOW CREATE TABLE, so the model adds them itself (`implicit=True`).
MySQL was not available to verify; its TABLE_MAP also counts every column (including VIRTUAL).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Iterable

from ..binlog.constants import ColumnType as T

# -- charsets and collations ----------------------------------------------------------------

# charset -> bytes per character (information_schema.CHARACTER_SETS.MAXLEN)
_MAXLEN = dict(
    (cs, int(n)) for cs, n in (p.split(":") for p in """
    armscii8:1 ascii:1 big5:2 binary:1 cp1250:1 cp1251:1 cp1256:1 cp1257:1 cp850:1 cp852:1
    cp866:1 cp932:2 dec8:1 eucjpms:3 euckr:2 gb2312:2 gbk:2 geostd8:1 greek:1 hebrew:1 hp8:1
    keybcs2:1 koi8r:1 koi8u:1 latin1:1 latin2:1 latin5:1 latin7:1 macce:1 macroman:1 sjis:2
    swe7:1 tis620:1 ucs2:2 ujis:3 utf16:4 utf16le:4 utf32:4 utf8mb3:3 utf8mb4:4 gb18030:4
    """.split()))

# Collations with ids below 100 (shared by MySQL and MariaDB); '*' marks the charset default.
_BASE_COLLATIONS = """
big5_chinese_ci:1* latin2_czech_cs:2 dec8_swedish_ci:3* cp850_general_ci:4* latin1_german1_ci:5
hp8_english_ci:6* koi8r_general_ci:7* latin1_swedish_ci:8* latin2_general_ci:9* swe7_swedish_ci:10*
ascii_general_ci:11* ujis_japanese_ci:12* sjis_japanese_ci:13* cp1251_bulgarian_ci:14
latin1_danish_ci:15 hebrew_general_ci:16* tis620_thai_ci:18* euckr_korean_ci:19*
latin7_estonian_cs:20 latin2_hungarian_ci:21 koi8u_general_ci:22* cp1251_ukrainian_ci:23
gb2312_chinese_ci:24* greek_general_ci:25* cp1250_general_ci:26* latin2_croatian_ci:27
gbk_chinese_ci:28* cp1257_lithuanian_ci:29 latin5_turkish_ci:30* latin1_german2_ci:31
armscii8_general_ci:32* utf8mb3_general_ci:33* cp1250_czech_cs:34 ucs2_general_ci:35*
cp866_general_ci:36* keybcs2_general_ci:37* macce_general_ci:38* macroman_general_ci:39*
cp852_general_ci:40* latin7_general_ci:41* latin7_general_cs:42 macce_bin:43
cp1250_croatian_ci:44 utf8mb4_general_ci:45* utf8mb4_bin:46 latin1_bin:47 latin1_general_ci:48
latin1_general_cs:49 cp1251_bin:50 cp1251_general_ci:51* cp1251_general_cs:52 macroman_bin:53
utf16_general_ci:54* utf16_bin:55 utf16le_general_ci:56* cp1256_general_ci:57* cp1257_bin:58
cp1257_general_ci:59* utf32_general_ci:60* utf32_bin:61 utf16le_bin:62 binary:63* armscii8_bin:64
ascii_bin:65 cp1250_bin:66 cp1256_bin:67 cp866_bin:68 dec8_bin:69 greek_bin:70 hebrew_bin:71
hp8_bin:72 keybcs2_bin:73 koi8r_bin:74 koi8u_bin:75 latin2_bin:77 latin5_bin:78 latin7_bin:79
cp850_bin:80 cp852_bin:81 swe7_bin:82 utf8mb3_bin:83 big5_bin:84 euckr_bin:85 gb2312_bin:86
gbk_bin:87 sjis_bin:88 tis620_bin:89 ucs2_bin:90 ujis_bin:91 geostd8_general_ci:92*
geostd8_bin:93 latin1_spanish_ci:94 cp932_japanese_ci:95* cp932_bin:96 eucjpms_japanese_ci:97*
eucjpms_bin:98 cp1250_polish_ci:99 gb18030_chinese_ci:248* gb18030_bin:249
gb18030_unicode_520_ci:250 utf8mb4_0900_ai_ci:255 utf8mb4_0900_as_cs:278 utf8mb4_0900_as_ci:305
utf8mb4_0900_bin:309 ucs2_general_mysql500_ci:159 utf8mb3_general_mysql500_ci:223
"""
# The Unicode collation series: the same languages at the same offset from each charset's base.
_UCA_LANGS = ("unicode icelandic latvian romanian slovenian polish estonian spanish swedish turkish "
              "czech danish lithuanian slovak spanish2 roman persian esperanto hungarian sinhala "
              "german2 croatian_mysql561 unicode_520 vietnamese").split()
_UCA_BASES = {"utf16": 101, "ucs2": 128, "utf32": 160, "utf8mb3": 192, "utf8mb4": 224}
# MariaDB additions: croatian, myanmar, thai_520_w2 per Unicode charset.
_MARIADB_EXTRA_BASES = {"utf8mb3": 576, "utf8mb4": 608, "ucs2": 640, "utf16": 672, "utf32": 736}
NOPAD_OFFSET = 1024
BINARY_COLLATION_ID = 63


class Collations:
    """Collation name <-> id, charset defaults and widths.

    Starts from a built-in table (enough for DDL-only mode) and is overlaid with the server's own
    information_schema at bootstrap. Names the table does not know still yield their charset's
    default id: the decoder only needs the charset to decode bytes exactly.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.charset_of_name: dict[str, str] = {}
        self.defaults: dict[str, str] = {}
        self.maxlen: dict[str, int] = dict(_MAXLEN)

    @classmethod
    def builtin(cls) -> "Collations":
        c = cls()
        for item in _BASE_COLLATIONS.split():
            name, _, rest = item.partition(":")
            cid = int(rest.rstrip("*"))
            cs = "binary" if name == "binary" else name.split("_", 1)[0]
            c.add(name, cid, cs, default=rest.endswith("*"))
        for cs, base in _UCA_BASES.items():
            for i, lang in enumerate(_UCA_LANGS):
                c.add(f"{cs}_{lang}_ci", base + i, cs)
        for cs, base in _MARIADB_EXTRA_BASES.items():
            for i, lang in enumerate(("croatian_ci", "myanmar_ci", "thai_520_w2")):
                c.add(f"{cs}_{lang}", base + i, cs)
        for name, cid in list(c.ids.items()):  # MariaDB NO PAD twins: id + 1024
            if cid < 248 and name != "binary":
                head, _, tail = name.rpartition("_")
                c.add(f"{head}_nopad_{tail}", cid + NOPAD_OFFSET, c.charset_of_name[name])
        return c

    def add(self, name: str, cid: int, charset: str, default: bool = False) -> None:
        name = name.lower()
        self.ids[name] = cid
        self.names.setdefault(cid, name)
        self.charset_of_name[name] = charset
        if default:
            self.defaults[charset] = name

    def load_rows(self, collations: Iterable[tuple[str, str, int, bool]],
                  charsets: Iterable[tuple[str, str, int]] = ()) -> None:
        """Overlay the server's tables: (name, charset, id, is_default) and (charset, default, maxlen)."""
        for name, cs, cid, is_default in collations:
            if cid is None or cs is None:
                continue
            self.names.pop(int(cid), None)
            self.add(name, int(cid), cs, bool(is_default))
            self.names[int(cid)] = name.lower()
        for cs, default, maxlen in charsets:
            self.defaults[cs] = default.lower()
            self.maxlen[cs] = int(maxlen)

    # -- lookups ---------------------------------------------------------------------------
    @staticmethod
    def canonical_charset(name: str) -> str:
        n = name.lower()
        return {"utf8": "utf8mb3"}.get(n, n)

    @staticmethod
    def canonical_collation(name: str) -> str:
        n = name.lower()
        return "utf8mb3_" + n[5:] if n.startswith("utf8_") else n

    def charset_of(self, collation: str) -> str | None:
        c = self.canonical_collation(collation)
        cs = self.charset_of_name.get(c)
        if cs is None:
            head = c.split("_", 1)[0]
            cs = head if head in self.maxlen else None
        return cs

    def default_collation(self, charset: str) -> str:
        cs = self.canonical_charset(charset)
        return self.defaults.get(cs) or ("binary" if cs == "binary" else f"{cs}_general_ci")

    def bin_collation(self, charset: str) -> str:
        cs = self.canonical_charset(charset)
        return "binary" if cs == "binary" else f"{cs}_bin"

    def id_of(self, collation: str | None, charset: str | None = None) -> int | None:
        """Numeric id; an unknown name falls back to its charset's default collation id."""
        if collation is not None:
            cid = self.ids.get(self.canonical_collation(collation))
            if cid is not None:
                return cid
            charset = charset or self.charset_of(collation)
        if charset is None:
            return None
        return self.ids.get(self.default_collation(charset))

    def name_of(self, cid: int) -> str | None:
        return self.names.get(cid)

    def width(self, charset: str | None) -> int:
        return self.maxlen.get(self.canonical_charset(charset), 4) if charset else 4

    def to_dict(self) -> dict[str, Any]:
        return {"ids": self.ids, "charsets": self.charset_of_name, "defaults": self.defaults,
                "maxlen": self.maxlen}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "Collations":
        c = cls.builtin()
        if d:
            for name, cid in d.get("ids", {}).items():
                c.ids[name] = cid
                c.names[cid] = name
            c.charset_of_name.update(d.get("charsets", {}))
            c.defaults.update(d.get("defaults", {}))
            c.maxlen.update(d.get("maxlen", {}))
        return c


BUILTIN_COLLATIONS = Collations.builtin()

# -- types ----------------------------------------------------------------------------------

INTEGER_TYPES = {"tinyint": T.TINY, "smallint": T.SHORT, "mediumint": T.INT24, "int": T.LONG,
                 "bigint": T.LONGLONG}
NUMERIC_TYPES = frozenset(INTEGER_TYPES) | {"decimal", "float", "double"}
TEXT_TYPES = {"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4}
BLOB_TYPES = {"tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4}
BLOB_CAPACITY = {1: 255, 2: 65535, 3: 16777215, 4: 4294967295}
GEOMETRY_TYPES = {"geometry": 0, "point": 1, "linestring": 2, "polygon": 3, "multipoint": 4,
                  "multilinestring": 5, "multipolygon": 6, "geometrycollection": 7}
CHARACTER_TYPES = frozenset({"char", "varchar", "enum", "set"}) | frozenset(TEXT_TYPES)
BINARY_TYPES = frozenset({"binary", "varbinary"}) | frozenset(BLOB_TYPES)
TEMPORAL_FSP_TYPES = frozenset({"time", "datetime", "timestamp"})
FIXED_BINARY_TYPES = {"uuid": 16, "inet6": 16, "inet4": 4}  # MariaDB data type plugins
KNOWN_TYPES = (NUMERIC_TYPES | CHARACTER_TYPES | BINARY_TYPES | TEMPORAL_FSP_TYPES
               | frozenset(GEOMETRY_TYPES) | frozenset(FIXED_BINARY_TYPES)
               | {"bit", "date", "year", "json", "vector"})


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its MySQL type with every parameter that changes the binlog encoding."""

    name: str
    type: str
    """Canonical lower-case base type: int, varchar, decimal, datetime, enum, longtext, json..."""
    length: int | None = None
    """Characters for char/varchar, bytes for binary/varbinary, bits for bit, dims for vector."""
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    unsigned: bool = False
    zerofill: bool = False
    charset: str | None = None
    collation: str | None = None
    values: tuple[str, ...] | None = None
    """ENUM/SET labels."""
    nullable: bool = True
    generated: str | None = None
    """virtual | stored | row_start | row_end (MariaDB system versioning)."""
    expression: str | None = None
    invisible: bool = False
    implicit: bool = False
    """MariaDB's implicit row_start/row_end: in every row image but in no SHOW CREATE TABLE."""
    is_json: bool = False
    """MariaDB JSON: LONGTEXT with a json_valid() CHECK; output stays JSON."""
    auto_increment: bool = False

    @property
    def key(self) -> str:
        """Column names are case-insensitive in MySQL."""
        return self.name.lower()

    def sql_type(self) -> str:
        """The type as SHOW CREATE TABLE spells it (for change records and messages)."""
        t = self.type
        if self.values is not None:
            labels = ",".join("'" + v.replace("'", "''") + "'" for v in self.values)
            s = f"{t}({labels})"
        elif t == "decimal":
            s = f"decimal({self.precision},{self.scale})"
        elif t in ("float", "double") and self.precision is not None:
            s = f"{t}({self.precision},{self.scale or 0})"
        elif t in TEMPORAL_FSP_TYPES and self.fsp:
            s = f"{t}({self.fsp})"
        elif self.length is not None and t in ("char", "varchar", "binary", "varbinary", "bit",
                                                "vector"):
            s = f"{t}({self.length})"
        else:
            s = t
        if self.unsigned:
            s += " unsigned"
        if self.zerofill:
            s += " zerofill"
        return s

    def describe(self) -> str:
        s = f"{self.name} {self.sql_type()}"
        if self.generated in ("virtual", "stored"):
            s += f" {self.generated}"
        if self.invisible and not self.implicit:
            s += " invisible"
        return s

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("name", "type") or v != f.default:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Column":
        d = dict(d)
        if d.get("values") is not None:
            d["values"] = tuple(d["values"])
        return cls(**d)


@dataclass(frozen=True, slots=True)
class Index:
    name: str
    kind: str
    """primary | unique | key | fulltext | spatial"""
    columns: tuple[str | None, ...]
    """Column names; None for a functional key part (an expression)."""
    prefixes: tuple[int | None, ...] = ()

    @property
    def is_unique(self) -> bool:
        return self.kind in ("primary", "unique")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind, "columns": list(self.columns)}
        if any(p is not None for p in self.prefixes):
            d["prefixes"] = list(self.prefixes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Index":
        return cls(d["name"], d["kind"], tuple(d["columns"]), tuple(d.get("prefixes", ())))


@dataclass(frozen=True, slots=True)
class TableDef:
    """A table (or MariaDB sequence) at one point of the binlog."""

    schema: str
    name: str
    columns: tuple[Column, ...]
    indexes: tuple[Index, ...] = ()
    charset: str | None = None
    collation: str | None = None
    system_versioned: bool = False
    kind: str = "table"
    json_checks: tuple[tuple[str, str], ...] = ()
    """Table-level CHECK (json_valid(col)) constraints as (constraint name, column)."""

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def position(self, name: str) -> int | None:
        k = name.lower()
        for i, c in enumerate(self.columns):
            if c.key == k:
                return i
        return None

    def column(self, name: str) -> Column | None:
        i = self.position(name)
        return None if i is None else self.columns[i]

    @property
    def primary_key(self) -> tuple[str, ...] | None:
        for ix in self.indexes:
            if ix.kind == "primary":
                return tuple(c for c in ix.columns if c is not None)
        return None

    def key_indexes(self) -> tuple[int, ...] | None:
        """Column positions the server reports as the primary key in TABLE_MAP metadata.

        Without a PRIMARY KEY the server promotes the first UNIQUE key whose parts are whole
        NOT NULL columns; system-versioned tables add row_end to every unique key.
        """
        chosen: Index | None = None
        for ix in self.indexes:
            if ix.kind == "primary":
                chosen = ix
                break
        if chosen is None:
            for ix in self.indexes:
                if ix.kind != "unique" or any(c is None for c in ix.columns):
                    continue
                if any(p is not None for p in ix.prefixes):
                    continue
                cols = [self.column(c) for c in ix.columns if c is not None]
                if all(c is not None and not c.nullable for c in cols):
                    chosen = ix
                    break
        if chosen is None:
            return None
        out = [self.position(c) for c in chosen.columns if c is not None]
        if self.system_versioned:
            end = next((i for i, c in enumerate(self.columns) if c.generated == "row_end"), None)
            if end is not None and end not in out:
                out.append(end)
        return tuple(i for i in out if i is not None)

    def json_columns(self) -> frozenset[str]:
        """Lower-case names of JSON columns: column-level JSON or json_valid() CHECKs."""
        return frozenset([c.key for c in self.columns if c.is_json or c.type == "json"]
                         + [col.lower() for _, col in self.json_checks])

    def renamed(self, schema: str, name: str) -> "TableDef":
        return replace(self, schema=schema, name=name)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": self.schema, "name": self.name,
                             "columns": [c.to_dict() for c in self.columns]}
        if self.indexes:
            d["indexes"] = [ix.to_dict() for ix in self.indexes]
        for k in ("charset", "collation"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.system_versioned:
            d["system_versioned"] = True
        if self.kind != "table":
            d["kind"] = self.kind
        if self.json_checks:
            d["json_checks"] = [list(x) for x in self.json_checks]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TableDef":
        return cls(
            schema=d["schema"], name=d["name"],
            columns=tuple(Column.from_dict(c) for c in d["columns"]),
            indexes=tuple(Index.from_dict(i) for i in d.get("indexes", ())),
            charset=d.get("charset"), collation=d.get("collation"),
            system_versioned=d.get("system_versioned", False), kind=d.get("kind", "table"),
            json_checks=tuple(tuple(x) for x in d.get("json_checks", ())))

    def describe(self) -> str:
        """Compact shape for error messages."""
        return f"{self.qualified_name}(" + ", ".join(c.describe() for c in self.columns) + ")"


@dataclass(frozen=True, slots=True)
class DatabaseDef:
    name: str
    charset: str | None = None
    collation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DatabaseDef":
        return cls(**d)


@dataclass
class Catalog:
    """Every tracked database and table at one position: what DDL is applied to.

    DDL is applied to a copy (`copy()`), so a statement that fails half-way leaves the tracked
    state untouched.
    """

    databases: dict[str, DatabaseDef] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableDef] = field(default_factory=dict)
    server_charset: str = "utf8mb4"
    server_collation: str | None = None
    lower_case_table_names: int = 0
    collations: Collations = field(default_factory=Collations.builtin)

    def norm(self, name: str) -> str:
        return name.lower() if self.lower_case_table_names else name

    def key(self, schema: str, table: str) -> tuple[str, str]:
        return (self.norm(schema), self.norm(table))

    def table(self, schema: str, table: str) -> TableDef | None:
        return self.tables.get(self.key(schema, table))

    def copy(self) -> "Catalog":
        return Catalog(dict(self.databases), dict(self.tables), self.server_charset,
                       self.server_collation, self.lower_case_table_names, self.collations)

    def database_defaults(self, schema: str) -> tuple[str, str]:
        """(charset, collation) new tables in `schema` inherit."""
        db = self.databases.get(self.norm(schema))
        if db is not None and (db.charset or db.collation):
            cs = db.charset or self.collations.charset_of(db.collation or "") or self.server_charset
            return cs, db.collation or self.collations.default_collation(cs)
        cs = self.server_charset
        coll = self.server_collation
        if coll is None or self.collations.charset_of(coll) != cs:
            coll = self.collations.default_collation(cs)
        return cs, coll


# -- the binlog view of a column ------------------------------------------------------------

def _string_meta(real_type: int, nbytes: int) -> int:
    """STRING metadata: real type byte (with the length's bits 8-9 folded in) + low byte."""
    hi = real_type ^ (((nbytes >> 8) & 0x3) << 4)
    return (hi << 8) | (nbytes & 0xFF)


def set_storage_bytes(count: int) -> int:
    n = (count + 7) // 8
    return 8 if n > 4 else n


def binlog_shapes(col: Column, collations: Collations = BUILTIN_COLLATIONS) -> list[tuple[int, int]]:
    """The (TABLE_MAP type byte, metadata) pairs a column may be written with.

    Several are allowed where servers legitimately differ: JSON (MySQL native vs MariaDB
    LONGTEXT) and temporals (pre-5.6 formats in tables created by old servers).
    """
    t = col.type
    if t in INTEGER_TYPES:
        return [(INTEGER_TYPES[t], 0)]
    if t == "decimal":
        return [(T.NEWDECIMAL, ((col.precision or 10) << 8) | (col.scale or 0))]
    if t == "float":
        return [(T.FLOAT, 4)]
    if t == "double":
        return [(T.DOUBLE, 8)]
    if t == "bit":
        n = col.length or 1
        return [(T.BIT, ((n // 8) << 8) | (n % 8))]
    if t == "date":
        return [(T.DATE, 0), (T.NEWDATE, 0)]
    if t == "year":
        return [(T.YEAR, 0)]
    if t == "time":
        return [(T.TIME2, col.fsp or 0), (T.TIME, 0)]
    if t == "datetime":
        return [(T.DATETIME2, col.fsp or 0), (T.DATETIME, 0)]
    if t == "timestamp":
        return [(T.TIMESTAMP2, col.fsp or 0), (T.TIMESTAMP, 0)]
    if t in ("char", "binary"):
        width = 1 if t == "binary" else collations.width(col.charset)
        return [(T.STRING, _string_meta(T.STRING, (col.length or 1) * width))]
    if t in ("varchar", "varbinary"):
        width = 1 if t == "varbinary" else collations.width(col.charset)
        return [(T.VARCHAR, (col.length or 0) * width)]
    if t == "enum":
        size = 1 if len(col.values or ()) < 256 else 2
        return [(T.STRING, (T.ENUM << 8) | size)]
    if t == "set":
        return [(T.STRING, (T.SET << 8) | set_storage_bytes(len(col.values or ())))]
    if t in TEXT_TYPES:
        return [(T.BLOB, TEXT_TYPES[t])]
    if t in BLOB_TYPES:
        return [(T.BLOB, BLOB_TYPES[t])]
    if t == "json":
        return [(T.JSON, 4), (T.BLOB, 4)]
    if t in GEOMETRY_TYPES:
        return [(T.GEOMETRY, 4)]
    if t in FIXED_BINARY_TYPES:
        return [(T.STRING, _string_meta(T.STRING, FIXED_BINARY_TYPES[t]))]
    if t == "vector":
        return [(T.VECTOR, 4), (T.VARCHAR, 4 * (col.length or 0))]
    return []


def column_collation_id(col: Column, collations: Collations = BUILTIN_COLLATIONS) -> int | None:
    """The collation id TABLE_MAP metadata would carry for this column (None for non-strings)."""
    t = col.type
    if t in BINARY_TYPES or t in FIXED_BINARY_TYPES or t in GEOMETRY_TYPES:
        return BINARY_COLLATION_ID
    if t == "json":
        return collations.id_of("utf8mb4_bin")
    if t in CHARACTER_TYPES:
        return collations.id_of(col.collation, col.charset)
    return None
