"""MySQL's binary JSON format (the bytes of a JSON column in a rows event) to Python values.

MySQL stores JSON as a tree of typed values (sql/json_binary.h describes the layout):

    doc        ::= type value
    object     ::= count size key-entry* value-entry* key* value*      (same for array, no keys)
    key-entry  ::= key-offset(2|4) key-length(2)
    value-entry::= type offset-or-inlined-value(2|4)

Small containers use 2-byte counts/sizes/offsets, large ones 4-byte. Offsets count from the
first byte after the container's type byte. Literals and 16-bit ints are always inlined in
the value entry; 32-bit ints only in the large format.

Mapping: object -> dict (keys in stored order, which is MySQL's order: shorter keys first,
then bytewise), array -> list, string -> str, ints -> int, double -> float, literals ->
None/True/False. OPAQUE values: NEWDECIMAL -> decimal.Decimal (scale kept), DATE ->
datetime.date, DATETIME/TIMESTAMP -> datetime.datetime (naive, as stored), TIME -> MySQLTime,
impossible dates (zero dates, day 0, Feb 30) -> InvalidTemporal; every other opaque type ->
JsonOpaque(type_code, data).

Every malformed input raises DecodeError: the decoder checks each offset against the
enclosing container, caps nesting at MAX_DEPTH, and charges each entry and each string byte
against a budget equal to the input length, so a crafted document whose entries all point at
one shared subtree (legal-looking, never written by MySQL) cannot blow up exponentially.
"""
from __future__ import annotations

import base64
import datetime as _dt
import struct
from dataclasses import dataclass
from decimal import Decimal

from binlake.binlog.constants import ColumnType
from binlake.errors import DecodeError
from binlake.binlog.columns.decimal import decimal_bin_size, decode_decimal_bin
from binlake.binlog.values import JSON_NULL, InvalidTemporal, MySQLTime

__all__ = [
    "JsonOpaque",
    "MAX_DEPTH",
    "decode_json_binary",
    "decode_json_column",
    "decode_decimal_bin",
    "decimal_bin_size",
    "json_default",
]

# Container nesting MySQL allows (JSON_DOCUMENT_MAX_DEPTH); one more level is corruption.
MAX_DEPTH = 100

# Binary JSON type bytes.
_SMALL_OBJECT = 0x00
_LARGE_OBJECT = 0x01
_SMALL_ARRAY = 0x02
_LARGE_ARRAY = 0x03
_LITERAL = 0x04
_INT16 = 0x05
_UINT16 = 0x06
_INT32 = 0x07
_UINT32 = 0x08
_INT64 = 0x09
_UINT64 = 0x0A
_DOUBLE = 0x0B
_STRING = 0x0C
_OPAQUE = 0x0F

_LITERALS = {0x00: None, 0x01: True, 0x02: False}

# Opaque field types that get a native Python value (plain ints: IntEnum compares slower).
_T_NEWDECIMAL = int(ColumnType.NEWDECIMAL)
_T_DATE = int(ColumnType.DATE)
_T_DATETIME = int(ColumnType.DATETIME)
_T_TIMESTAMP = int(ColumnType.TIMESTAMP)
_T_TIME = int(ColumnType.TIME)

_S_H = struct.Struct("<H")
_S_h = struct.Struct("<h")
_S_I = struct.Struct("<I")
_S_i = struct.Struct("<i")
_S_q = struct.Struct("<q")
_S_Q = struct.Struct("<Q")
_S_d = struct.Struct("<d")
_S_HH = struct.Struct("<HH")
_S_II = struct.Struct("<II")
# Entry layouts, unpacked for a whole container at once with iter_unpack.
_S_KEY_SMALL = struct.Struct("<HH")   # key-offset u16, key-length u16
_S_KEY_LARGE = struct.Struct("<IH")   # key-offset u32, key-length u16
_S_VAL_SMALL = struct.Struct("<BH")   # type, offset-or-inline u16
_S_VAL_LARGE = struct.Struct("<BI")   # type, offset-or-inline u32


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """A JSON OPAQUE value with no JSON equivalent (BLOB, BIT, GEOMETRY, VARCHAR ...).

    `type_code` is the MySQL column type (enum_field_types) the value came from; MySQL
    prints it as "base64:type<code>:<base64 of data>", which json_default reproduces.
    """

    type_code: int
    data: bytes


def decode_json_binary(data: bytes | bytearray | memoryview) -> object:
    """Decode one binary JSON document (a JSON column's bytes after its length prefix).

    An empty buffer is JSON null: MySQL stores that for JSON columns that got an implicit
    empty value (e.g. a NOT NULL JSON column added by ALTER TABLE, or non-strict inserts),
    and its own reader returns the null literal for it.
    """
    buf = data if type(data) is bytes else bytes(data)
    n = len(buf)
    if n == 0:
        return None
    budget = [n]
    try:
        value = _value(buf, memoryview(buf), buf[0], 1, n, 0, budget)
    except DecodeError:
        raise
    except (struct.error, IndexError, ValueError, OverflowError, RecursionError) as exc:
        # Defensive: every path is bounds-checked; this only keeps a bug from surfacing as
        # an exception type callers do not expect.
        raise DecodeError(f"malformed binary JSON: {exc}") from None
    if budget[0] < 0:
        raise _shared_error()
    return value


def decode_json_column(data: bytes | bytearray | memoryview) -> object:
    """A JSON column's value: its document, where a top-level JSON null is JSON_NULL (None
    stays SQL NULL)."""
    value = decode_json_binary(data)
    return JSON_NULL if value is None else value


def _shared_error() -> DecodeError:
    return DecodeError("binary JSON references more data than it holds (shared values)")


def _value(
    buf: bytes, view: memoryview, t: int, pos: int, end: int, depth: int, budget: list[int]
) -> object:
    """Decode the value of type `t` stored at buf[pos:], which must not reach past `end`."""
    if t <= _LARGE_ARRAY:
        if depth >= MAX_DEPTH:
            raise DecodeError(f"binary JSON nests deeper than {MAX_DEPTH} levels")
        return _container(buf, view, t, pos, end, depth + 1, budget)
    if t == _STRING:
        length, pos = _varlen(buf, pos, end)
        if length > end - pos:
            raise DecodeError(f"binary JSON string of {length} bytes overruns its container")
        budget[0] -= length
        return _utf8(buf, pos, pos + length)
    if t == _LITERAL:
        if pos >= end:
            raise DecodeError("binary JSON literal is truncated")
        return _literal(buf[pos])
    if t == _OPAQUE:
        if pos >= end:
            raise DecodeError("binary JSON opaque value is truncated")
        field_type = buf[pos]
        length, pos = _varlen(buf, pos + 1, end)
        if length > end - pos:
            raise DecodeError(f"binary JSON opaque value of {length} bytes overruns its container")
        budget[0] -= length
        return _opaque(field_type, buf[pos:pos + length])
    fixed = _FIXED.get(t)
    if fixed is None:
        raise DecodeError(f"unknown binary JSON type 0x{t:02x}")
    unpacker, width, name = fixed
    if pos + width > end:
        raise DecodeError(f"binary JSON {name} is truncated")
    return unpacker(buf, pos)[0]


_FIXED = {
    _INT16: (_S_h.unpack_from, 2, "int16"),
    _UINT16: (_S_H.unpack_from, 2, "uint16"),
    _INT32: (_S_i.unpack_from, 4, "int32"),
    _UINT32: (_S_I.unpack_from, 4, "uint32"),
    _INT64: (_S_q.unpack_from, 8, "int64"),
    _UINT64: (_S_Q.unpack_from, 8, "uint64"),
    _DOUBLE: (_S_d.unpack_from, 8, "double"),
}


def _utf8(buf: bytes, start: int, stop: int) -> str:
    try:
        return buf[start:stop].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"binary JSON text is not valid UTF-8: {exc.reason}") from None


def _container(
    buf: bytes, view: memoryview, t: int, pos: int, end: int, depth: int, budget: list[int]
) -> object:
    """Decode an object or array whose header starts at buf[pos].

    The loop inlines the common cases (inlined scalars, short strings) because this is the
    row-decoding hot path; everything else goes through _value.
    """
    large = t & 1  # LARGE_OBJECT and LARGE_ARRAY are the odd codes
    if large:
        if pos + 8 > end:
            raise DecodeError("binary JSON large container header is truncated")
        count, size = _S_II.unpack_from(buf, pos)
        osz = 4
        key_s, val_s = _S_KEY_LARGE, _S_VAL_LARGE
    else:
        if pos + 4 > end:
            raise DecodeError("binary JSON small container header is truncated")
        count, size = _S_HH.unpack_from(buf, pos)
        osz = 2
        key_s, val_s = _S_KEY_SMALL, _S_VAL_SMALL
    if size > end - pos:
        raise DecodeError(
            f"binary JSON container claims {size} bytes but only {end - pos} remain"
        )
    cend = pos + size
    is_object = t <= _LARGE_OBJECT
    keys_start = pos + 2 * osz
    vals_start = keys_start + (count * (osz + 2) if is_object else 0)
    header_end = vals_start + count * (osz + 1)
    if header_end > cend:
        raise DecodeError(f"binary JSON container of {size} bytes cannot hold {count} entries")
    # Every entry and every text byte is charged once per visit; a legitimate document
    # can never spend more than its own length (entries are >= 3 bytes each).
    budget[0] -= count
    if budget[0] < 0:
        raise _shared_error()
    spent = 0

    values: list[object] = []
    append = values.append
    for vt, off in val_s.iter_unpack(view[vals_start:header_end]):
        if vt == _STRING:
            vpos = pos + off
            if vpos < header_end or vpos >= cend:
                raise _offset_error(off, header_end - pos, size)
            length = buf[vpos]
            if length < 0x80:
                vpos += 1
            else:
                length, vpos = _varlen(buf, vpos, cend)
            stop = vpos + length
            if stop > cend:
                raise DecodeError(f"binary JSON string of {length} bytes overruns its container")
            spent += length
            try:
                append(buf[vpos:stop].decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise DecodeError(f"binary JSON string is not valid UTF-8: {exc.reason}") from None
        elif vt == _INT16:
            v = off & 0xFFFF
            append(v - 0x10000 if v & 0x8000 else v)
        elif vt == _LITERAL:
            append(_literal(off & 0xFF))
        elif vt == _UINT16:
            append(off & 0xFFFF)
        elif large and vt == _INT32:
            append(off - 0x100000000 if off & 0x80000000 else off)
        elif large and vt == _UINT32:
            append(off)
        else:
            vpos = pos + off
            if vpos < header_end or vpos >= cend:
                raise _offset_error(off, header_end - pos, size)
            append(_value(buf, view, vt, vpos, cend, depth, budget))

    if is_object:
        result: dict[str, object] = {}
        i = 0
        for koff, klen in key_s.iter_unpack(view[keys_start:vals_start]):
            kpos = pos + koff
            kstop = kpos + klen
            if kpos < header_end or kstop > cend:
                raise DecodeError(
                    f"binary JSON key offset {koff} (length {klen}) is outside its container"
                )
            spent += klen
            try:
                result[buf[kpos:kstop].decode("utf-8")] = values[i]
            except UnicodeDecodeError as exc:
                raise DecodeError(f"binary JSON key is not valid UTF-8: {exc.reason}") from None
            i += 1
        out: object = result
    else:
        out = values
    budget[0] -= spent
    if budget[0] < 0:
        raise _shared_error()
    return out


def _offset_error(off: int, header_len: int, size: int) -> DecodeError:
    return DecodeError(
        f"binary JSON value offset {off} is outside its container "
        f"(entries end at {header_len}, size {size})"
    )


def _literal(code: int) -> object:
    try:
        return _LITERALS[code]
    except KeyError:
        raise DecodeError(f"unknown binary JSON literal 0x{code:02x}") from None


def _varlen(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read MySQL's variable-length string length: 7 bits a byte, low bits first, <= 5 bytes."""
    if pos >= end:
        raise DecodeError("binary JSON length is truncated")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    stop = min(pos + 5, end)
    pos += 1
    while pos < stop:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise DecodeError("binary JSON length exceeds 32 bits")
            return value, pos
        shift += 7
    raise DecodeError("binary JSON length is truncated or longer than 5 bytes")


# --- OPAQUE values -----------------------------------------------------------------------

def _opaque(field_type: int, data: bytes) -> object:
    """Turn an opaque payload into a Python value for the types MySQL gives a meaning."""
    if field_type == _T_NEWDECIMAL:
        if len(data) < 2:
            raise DecodeError("binary JSON decimal is missing precision/scale")
        precision, scale = data[0], data[1]
        need = decimal_bin_size(precision, scale)
        if len(data) - 2 < need:
            raise DecodeError(
                f"binary JSON decimal({precision},{scale}) needs {need} bytes, has {len(data) - 2}"
            )
        return decode_decimal_bin(data[2:2 + need], precision, scale)
    if field_type in (_T_DATE, _T_DATETIME, _T_TIMESTAMP, _T_TIME):
        if len(data) != 8:
            raise DecodeError(f"binary JSON temporal value has {len(data)} bytes, expected 8")
        packed = _S_q.unpack_from(data)[0]
        if field_type == _T_TIME:
            return _time_from_packed(packed)
        return _datetime_from_packed(packed, date_only=field_type == _T_DATE)
    return JsonOpaque(field_type, bytes(data))


def _datetime_from_packed(packed: int, *, date_only: bool) -> object:
    """Unpack MySQL's "longlong datetime packed" format (TIME_to_longlong_datetime_packed)."""
    if packed < 0:
        raise DecodeError(f"binary JSON datetime has a negative packed value {packed}")
    frac = packed & 0xFFFFFF
    ymdhms = packed >> 24
    ymd = ymdhms >> 17
    hms = ymdhms & 0x1FFFF
    day = ymd & 0x1F
    year, month = divmod(ymd >> 5, 13)
    hour = hms >> 12
    minute = (hms >> 6) & 0x3F
    second = hms & 0x3F
    if year > 9999 or frac >= 1_000_000 or hour > 23 or minute > 59 or second > 59:
        raise DecodeError(
            f"binary JSON datetime out of range: {year}-{month}-{day} "
            f"{hour}:{minute}:{second}.{frac}"
        )
    if date_only:
        text = f"{year:04d}-{month:02d}-{day:02d}"
    else:
        text = (
            f"{year:04d}-{month:02d}-{day:02d} "
            f"{hour:02d}:{minute:02d}:{second:02d}.{frac:06d}"
        )
    if year == 0 or month == 0 or day == 0:
        return InvalidTemporal(text)
    try:
        if date_only:
            return _dt.date(year, month, day)
        return _dt.datetime(year, month, day, hour, minute, second, frac)
    except ValueError:
        # e.g. '2024-02-30' under ALLOW_INVALID_DATES: a real value Python cannot hold.
        return InvalidTemporal(text)


def _time_from_packed(packed: int) -> MySQLTime:
    """Unpack MySQL's "longlong time packed" format (TIME_to_longlong_time_packed)."""
    negative = packed < 0
    if negative:
        packed = -packed
    frac = packed & 0xFFFFFF
    hms = packed >> 24
    hour = hms >> 12
    minute = (hms >> 6) & 0x3F
    second = hms & 0x3F
    if hour > 838 or minute > 59 or second > 59 or frac >= 1_000_000:
        raise DecodeError(
            f"binary JSON time out of range: {hour}:{minute}:{second}.{frac}"
        )
    return MySQLTime(negative, hour, minute, second, frac)


# --- serialisation helper ----------------------------------------------------------------

def json_default(value: object) -> object:
    """`default=` hook for json.dumps over decoded documents.

    Decimals become their exact text (a JSON string, never a float), dates/datetimes ISO
    8601, MySQLTime its MySQL text ('-12:00:00.000000'), InvalidTemporal its MySQL text and
    JsonOpaque MySQL's own rendering "base64:type<code>:<base64>". Anything else raises
    TypeError, as the json module's protocol requires.
    """
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, MySQLTime):
        return value.format()
    if isinstance(value, InvalidTemporal):
        return value.text
    if isinstance(value, JsonOpaque):
        return f"base64:type{value.type_code}:{base64.b64encode(value.data).decode('ascii')}"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
