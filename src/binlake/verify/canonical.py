"""The canonical text of a row, as MariaDB/MySQL computes it in SQL.

Both sides of `binlake verify` hash the same text for the same row: this module writes the
SQL that the source server evaluates; `binlake.spark.verify` writes the Spark expressions
for the Delta table from the same column kinds. What a kind's text is:

* int: the decimal integer (signed, unsigned 64-bit, BIT and YEAR as numbers).
* decimal: the digits with the column's scale ('-12.5000').
* float: the exact binary value, not a printed one: the sign, the binary exponent, 'p', and
  the 53-bit integer mantissa ('-0p6755399441055744' for -1.5, '+-2p...' for 0.3); '0' for zero (either sign).
  Computed with FLOOR(LOG2()), POW(2, n) and division by powers of two, which are exact on
  both sides (LOG2's rounding is kept below the exponent and corrected by one test, and
  clamped to the exponents a double has), so FLOAT and DOUBLE compare by their bits.
* date / datetime: 'YYYY-MM-DD' / 'YYYY-MM-DD hh:mm:ss.ffffff' (always 6 fraction digits);
  a zero date or a zero part ('2024-02-00') is NULL, as binlake stores it.
* timestamp: microseconds since the epoch (UTC), NULL for the zero timestamp.
* text: the characters (CHAR, VARCHAR, TEXT, ENUM, SET by label, TIME as MariaDB prints it,
  JSON as the stored text on MariaDB), in UTF-8.
* binary: upper-case hex of the bytes (BINARY(n) with its zero padding).
* geometry: '<srid>:<hex of the WKB>'.

A key's text frames each value as 'V<byte length>:<text>', NULL as 'N' (the key text names
rows on both sides). A row's text, which is hashed, is cheaper to make and still read back
one way: its values joined by ',', NULL as 'N', and only the text kind, whose characters
can be anything, framed as '<byte length>:<text>'; no other kind's text holds ',' or is 'N'.
So NULL differs from '' and no two rows share a text by moving bytes between columns, and
each value is computed once (the server does not share a value used twice in a frame). A
row's hash is SHA-1 of its text; a chunk's checksum is COUNT(*) and BIT_XOR of the first 64
bits of the row hashes (as pt-table-checksum does). SHA-1, not MD5: CPUs with SHA
instructions (x86 SHA-NI, ARMv8) hash it 1.5-2.5x faster on both sides; not CRC32, whose
linearity lets the XOR of two rows' hashes miss values swapped between them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BinlakeError
from ..schema.spec import SERVER_TEXT_TYPES

KINDS = ("int", "decimal", "float", "date", "datetime", "timestamp", "text", "binary",
         "geometry")
RANGE_KINDS = frozenset({"int", "decimal", "date", "datetime", "timestamp", "binary"})
"""Key kinds whose order is the same in SQL and in Spark (range chunks); other keys are
chunked by a hash of the key."""

_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set",
         "json", "time"}
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_GEOMETRY = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
             "multipolygon", "geometrycollection", "geomcollection"}
MANTISSA = 4503599627370496
"""2**52: scales a double's [1, 2) significand to its 53-bit integer mantissa."""


class VerifyError(BinlakeError):
    """`binlake verify` cannot compare a table (configuration, unsupported type, no table)."""


@dataclass(frozen=True)
class Column:
    """One source column as verify compares it."""

    name: str
    kind: str
    data_type: str
    """information_schema DATA_TYPE (lower case), for messages."""
    charset: str | None = None
    """information_schema CHARACTER_SET_NAME (lower case) of a character column."""


def column_kind(name: str, data_type: str, charset: str | None) -> str:
    """The canonical kind of an information_schema column; refuses what binlake cannot land."""
    t = data_type.lower()
    if t in _INTEGERS or t in ("year", "bit"):
        return "int"
    if t in ("decimal", "numeric"):
        return "decimal"
    if t in ("float", "double", "real"):
        return "float"
    if t in ("date", "datetime", "timestamp"):
        return t
    if t in _TEXT:
        if t in ("char", "varchar") and str(charset or "").lower() == "binary":
            return "binary"
        return "text"
    if t in SERVER_TEXT_TYPES:
        return "text"
    if t in _BINARY:
        return "binary"
    if t in _GEOMETRY:
        return "geometry"
    raise VerifyError(f"column {name}: type {data_type} is not supported by verify",
                      hint="binlake does not land it exactly (e.g. VECTOR)")


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _float_sql(x: str) -> str:
    # e0 is the exponent or one below it: LOG2 is off by a few ulps at most (just under a
    # power of two it can round up to that exponent), and 1e-9 below it cannot. a / 2^e0
    # is then in [1, 4), exact, and one test picks the exponent: half the LOG2 and POW
    # calls of correcting e0 both ways (the server computes a value once per use).
    a = f"ABS({x})"
    e0 = f"GREATEST(FLOOR(LOG2({a}) - 1e-9), -1074)"
    r = f"({a} / POW(2, {e0}))"
    return (f"IF({x} = 0, '0', CONCAT(IF({x} < 0, '-', '+'), IF({r} < 2, "
            f"CONCAT({e0}, 'p', CAST({r} * {MANTISSA} AS UNSIGNED)), "
            f"CONCAT({e0} + 1, 'p', CAST({r} * {MANTISSA // 2} AS UNSIGNED)))))")


def _zero_date(x: str) -> str:
    return f"(MONTH({x}) = 0 OR DAYOFMONTH({x}) = 0)"


def value_sql(col: Column) -> str:
    """SQL for the column's canonical text (NULL for NULL), in the connection's utf8mb4.

    Written for parameterized execution: a literal % is doubled."""
    x = q(col.name)
    k = col.kind
    if k == "int":
        return f"CAST({x} + 0 AS CHAR)" if col.data_type in ("bit", "year") else \
            f"CAST({x} AS CHAR)"
    if k == "decimal":
        return f"CAST({x} AS CHAR)"
    if k == "float":
        return _float_sql(x)
    if k == "date":
        return f"IF({_zero_date(x)}, NULL, DATE_FORMAT({x}, '%%Y-%%m-%%d'))"
    if k == "datetime":
        return f"IF({_zero_date(x)}, NULL, DATE_FORMAT({x}, '%%Y-%%m-%%d %%H:%%i:%%s.%%f'))"
    if k == "timestamp":
        return (f"IF({_zero_date(x)}, NULL, "
                f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {x}) AS CHAR))")
    if k == "binary":
        return f"HEX({x})"
    if k == "geometry":
        return f"CONCAT(ST_SRID({x}), ':', HEX(ST_AsBinary({x})))"
    if col.data_type == "time" or col.data_type in SERVER_TEXT_TYPES:
        return f"CAST({x} AS CHAR)"
    if _utf8mb4(col):  # its bytes as they are: a copy through CONVERT costs about
        return f"({x} COLLATE utf8mb4_bin)"  # a fifth of a long text's checksum
    return f"CONVERT({x} USING utf8mb4)"


def _utf8mb4(col: Column) -> bool:
    """A text column `value_sql` reads as its own utf8mb4 bytes (one collation for all)."""
    return col.charset == "utf8mb4" and col.data_type != "time" and \
        col.data_type not in SERVER_TEXT_TYPES


def frame_sql(value: str) -> str:
    """'V<bytes>:<text>' or 'N' for NULL, as a binary string (no collation to mix)."""
    b = f"CAST({value} AS BINARY)"
    return f"IFNULL(CONCAT('V', LENGTH({b}), ':', {b}), 'N')"


def frame_text(value: str | None) -> str:
    """`frame_sql` in Python: a value's frame from its canonical text."""
    return "N" if value is None else f"V{len(value.encode('utf-8', 'surrogateescape'))}:{value}"


def text_sql(cols: list[Column] | tuple[Column, ...]) -> str:
    """The canonical text of a key's columns (each value framed, see the module notes)."""
    return "CONCAT(" + ", ".join(frame_sql(value_sql(c)) for c in cols) + ")"


def row_sql(cols: list[Column] | tuple[Column, ...]) -> str:
    """The canonical text of a row, which is hashed (see the module notes): text values
    framed by their byte length, the others as they are, joined by ','."""
    parts = []
    for c in cols:
        v = value_sql(c)
        if c.kind == "text":
            if _utf8mb4(c) or v.startswith("CONVERT("):  # utf8mb4: no binary copy
                parts.append(f"IFNULL(CONCAT(OCTET_LENGTH({v}), ':', {v}), 'N')")
            else:
                b = f"CAST({v} AS BINARY)"
                parts.append(f"IFNULL(CONCAT(LENGTH({b}), ':', {b}), 'N')")
        else:
            parts.append(f"IFNULL({v}, 'N')")
    return "CONCAT_WS(',', " + ", ".join(parts) + ")"


def hash64_sql(text: str) -> str:
    """The first 64 bits of SHA1(text), unsigned."""
    return f"CAST(CONV(LEFT(SHA1({text}), 16), 16, 10) AS UNSIGNED)"


def bucket_sql(key_text: str, buckets: int) -> str:
    """The hash bucket of a key (chunks of tables whose key order differs between sides)."""
    return f"(CAST(CONV(SUBSTRING(SHA1({key_text}), 17, 8), 16, 10) AS UNSIGNED) %% {buckets})"


def boundary_sql(col: Column) -> str:
    """SQL reading a key column as the text a chunk boundary keeps (see `boundary_param`)."""
    x = q(col.name)
    if col.kind in ("int", "decimal"):
        return f"CAST({x} AS CHAR)"
    if col.kind == "date":
        return f"DATE_FORMAT({x}, '%%Y-%%m-%%d')"
    if col.kind in ("datetime", "timestamp"):
        return f"DATE_FORMAT({x}, '%%Y-%%m-%%d %%H:%%i:%%s.%%f')"
    if col.kind == "binary":
        return f"HEX({x})"
    raise VerifyError(f"column {col.name}: no range chunks over a {col.data_type} key")


def boundary_param(col: Column, text: str) -> object:
    """A boundary's text as the SQL parameter compared with the column's own type."""
    from decimal import Decimal

    if col.kind == "int":
        return int(text)
    if col.kind == "decimal":
        return Decimal(text)
    if col.kind == "binary":
        return bytes.fromhex(text)
    return text
