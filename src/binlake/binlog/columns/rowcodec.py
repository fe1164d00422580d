"""Compile a row decoder per (TABLE_MAP, column-presence bitmap): decode once, run many.

The generated function has no per-field type dispatch: each present column becomes a few
straight-line statements (struct unpacks on the event bytes, slices for strings), so a row
costs one Python call. The source is kept on the function (`__source__`) for debugging.
"""
from __future__ import annotations

import codecs
import datetime as _dt
import struct
from typing import Any, Callable, Sequence

from ...errors import DecodeError
from ..values import ABSENT, Geometry
from ..constants import ColumnType as T
from ..table_map import ColumnInfo
from . import fixedbin, temporal
from .charsets import codec_for
from .decimal import decoder_for as decimal_decoder
from .decimal import decode_decimal
from ..._speedups.native import c_module as _c_module
from ..._speedups.native import prepare_float_text, switches

RowDecoder = Callable[[bytes, int], tuple[tuple[Any, ...], int]]

_INT_STRUCTS: dict[tuple[int, bool], tuple[str, int]] = {
    (T.TINY, False): ("b", 1), (T.TINY, True): ("B", 1),
    (T.SHORT, False): ("h", 2), (T.SHORT, True): ("H", 2),
    (T.LONG, False): ("i", 4), (T.LONG, True): ("I", 4),
    (T.LONGLONG, False): ("q", 8), (T.LONGLONG, True): ("Q", 8),
}


def _json_decoder() -> Callable[[bytes], Any]:
    from .json_binary import decode_json_column

    return decode_json_column


def _labels_enum(labels: tuple[str, ...]) -> Callable[[int], Any]:
    n = len(labels)

    def enum_value(idx: int) -> Any:
        if 0 < idx <= n:
            return labels[idx - 1]
        if idx == 0:
            return ""  # MySQL's "invalid value" entry of every ENUM
        raise DecodeError(f"ENUM index {idx} beyond its {n} values")

    return enum_value


def _labels_set(labels: tuple[str, ...]) -> Callable[[int], Any]:
    n = len(labels)

    def set_value(mask: int) -> Any:
        if mask >> n:
            raise DecodeError(f"SET bitmask 0x{mask:x} has bits beyond its {n} values")
        return ",".join(labels[i] for i in range(n) if mask >> i & 1)

    return set_value


def _text_or_bytes(codec: str) -> Callable[[bytes], Any]:
    """Without charset metadata a CHAR/VARCHAR is tried as UTF-8 and kept as bytes otherwise."""

    def dec(b: bytes) -> Any:
        try:
            return b.decode(codec)
        except UnicodeDecodeError:
            return b

    return dec


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "ABSENT": ABSENT, "DecodeError": DecodeError, "Geometry": Geometry,
            "_date": temporal.decode_date, "_dt2": temporal.decode_datetime2,
            "_frac": temporal.read_frac, "_ts2": temporal.decode_timestamp2,
            "_ts1": temporal.decode_timestamp, "_dt1": temporal.decode_datetime_v1,
            "_t1": temporal.decode_time_v1, "_t2": temporal.decode_time2,
            "_dec": decode_decimal, "_from": int.from_bytes,
            "_D": _dt.date, "_DT": _dt.datetime, "_TD": _dt.timedelta, "_EPOCH": temporal.EPOCH,
        }
        self.counter = 0

    def bind(self, value: Any, prefix: str = "k") -> str:
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.ns[name] = value
        return name

    def emit(self, line: str, indent: int) -> None:
        self.lines.append("    " * indent + line)


def _length_prefixed(g: _Gen, var: str, nbytes: int, ind: int) -> None:
    if nbytes == 1:
        g.emit("n = buf[p]; p += 1", ind)
    elif nbytes == 2:
        g.emit("n = buf[p] | (buf[p + 1] << 8); p += 2", ind)
    else:
        g.emit(f"n = _from(buf[p:p + {nbytes}], 'little'); p += {nbytes}", ind)
    g.emit(f"{var} = buf[p:p + n]; p += n", ind)


def _emit_column(g: _Gen, c: ColumnInfo, var: str, ind: int, partial_json: bool) -> None:
    t = c.type
    unsigned = bool(c.unsigned)
    if (t, unsigned) in _INT_STRUCTS:
        fmt, size = _INT_STRUCTS[(t, unsigned)]
        s = g.bind(struct.Struct("<" + fmt).unpack_from, "u")
        g.emit(f"{var} = {s}(buf, p)[0]; p += {size}", ind)
    elif t == T.INT24:
        g.emit(f"{var} = _from(buf[p:p + 3], 'little', signed={not unsigned}); p += 3", ind)
    elif t == T.FLOAT:
        s = g.bind(struct.Struct("<f").unpack_from, "u")
        g.emit(f"{var} = {s}(buf, p)[0]; p += 4", ind)
    elif t == T.DOUBLE:
        s = g.bind(struct.Struct("<d").unpack_from, "u")
        g.emit(f"{var} = {s}(buf, p)[0]; p += 8", ind)
    elif t == T.YEAR:
        g.emit(f"{var} = buf[p]; p += 1", ind)
        g.emit(f"{var} = 1900 + {var} if {var} else 0", ind)
    elif t == T.NEWDECIMAL:
        fn = g.bind(decimal_decoder(c.precision, c.scale), "d")
        g.emit(f"{var}, p = {fn}(buf, p)", ind)
    elif t in (T.DATE, T.NEWDATE):
        g.emit("x = buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16); p += 3", ind)
        g.emit("try:", ind)
        g.emit(f"{var} = _D(x >> 9, (x >> 5) & 15, x & 31)", ind + 1)
        g.emit("except ValueError:", ind)
        g.emit(f"{var} = _date(x)", ind + 1)  # zero or zero-in-date: InvalidTemporal
    elif t == T.TIME:
        g.emit(f"{var} = _t1(_from(buf[p:p + 3], 'little')); p += 3", ind)
    elif t == T.TIME2:
        fsp = c.fsp
        g.emit(f"{var} = _t2(buf, p, {fsp}); p += {3 + temporal.frac_bytes(fsp)}", ind)
    elif t == T.DATETIME:
        g.emit(f"{var} = _dt1(_from(buf[p:p + 8], 'little')); p += 8", ind)
    elif t == T.DATETIME2:
        fsp = c.fsp
        fb = temporal.frac_bytes(fsp)
        g.emit("x = _from(buf[p:p + 5], 'big') - 0x8000000000", ind)
        _emit_frac(g, "p + 5", fsp, ind)
        g.emit(f"p += {5 + fb}", ind)
        g.emit("ymd = x >> 17; ym = ymd >> 5; hms = x & 0x1FFFF", ind)
        g.emit("try:", ind)
        g.emit(f"{var} = _DT(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63, us)",
               ind + 1)
        g.emit("except ValueError:", ind)
        g.emit(f"{var} = _dt2(x + 0x8000000000, us, {fsp})", ind + 1)
    elif t == T.TIMESTAMP:
        g.emit(f"{var} = _ts1(_from(buf[p:p + 4], 'little')); p += 4", ind)
    elif t == T.TIMESTAMP2:
        fsp = c.fsp
        fb = temporal.frac_bytes(fsp)
        g.emit("x = _from(buf[p:p + 4], 'big')", ind)
        _emit_frac(g, "p + 4", fsp, ind)
        g.emit(f"p += {4 + fb}", ind)
        g.emit("if x:", ind)
        g.emit(f"{var} = _EPOCH + _TD(0, x, us)", ind + 1)
        g.emit("else:", ind)
        g.emit(f"{var} = _ts2(x, us, {fsp})", ind + 1)
    elif t in (T.VARCHAR, T.VAR_STRING, T.STRING):
        if t == T.STRING:
            b0, b1 = c.meta >> 8, c.meta & 0xFF
            max_len = b1 | ((((b0 & 0x30) ^ 0x30) << 4) if (b0 & 0x30) != 0x30 else 0)
        else:
            max_len = c.meta
        _length_prefixed(g, var, 1 if max_len < 256 else 2, ind)
        if _plugin_width(c):
            fn = g.bind(fixedbin.text_function(str(c.plugin_type)), "i")
            g.emit(f"{var} = {fn}({var})", ind)
            return
        if t == T.STRING and c.collation == 63:
            # BINARY(n) is stored without its trailing zero bytes; the value has them.
            g.emit(f"{var} = {var}.ljust({max_len}, b'\\0')", ind)
        _emit_text(g, c, var, ind)
    elif t in (T.ENUM, T.SET):
        size = c.meta & 0xFF
        g.emit(f"{var} = _from(buf[p:p + {size}], 'little'); p += {size}", ind)
        labels = c.enum_values if t == T.ENUM else c.set_values
        if labels is not None:
            fn = g.bind(_labels_enum(labels) if t == T.ENUM else _labels_set(labels), "e")
            g.emit(f"{var} = {fn}({var})", ind)
    elif t == T.BIT:
        nbytes = (c.meta >> 8) + (1 if c.meta & 0xFF else 0)
        g.emit(f"{var} = _from(buf[p:p + {nbytes}], 'big'); p += {nbytes}", ind)
    elif t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        _length_prefixed(g, var, c.meta, ind)
        _emit_text(g, c, var, ind, blob=True)
    elif t == T.JSON:
        _length_prefixed(g, var, c.meta, ind)
        if partial_json:
            # PARTIAL_UPDATE_ROWS after-image: the caller decides (full doc or diff vector).
            return
        fn = g.bind(_json_decoder(), "j")
        g.emit(f"{var} = {fn}({var})", ind)
    elif t == T.GEOMETRY:
        _length_prefixed(g, var, c.meta, ind)
        g.emit(f"{var} = Geometry.from_storage({var})", ind)
    elif t == T.VECTOR:
        _length_prefixed(g, var, c.meta, ind)
        fn = g.bind(_vector, "v")
        g.emit(f"{var} = {fn}({var})", ind)
    elif t == T.NULL:
        g.emit(f"{var} = None", ind)
    else:
        raise DecodeError(f"column {c.name or c.index + 1}: type {c.type_name} (code {t}) "
                          "cannot be decoded by binlake")


def _plugin_width(c: ColumnInfo) -> int:
    """The byte width of a UUID/INET6/INET4 column whose binlog shape is that type's
    BINARY(n), else 0 (the column decodes as what the binlog says)."""
    width = fixedbin.WIDTHS.get(c.plugin_type or "", 0)
    return width if c.type == T.STRING and _string_max_len(c) == width else 0


def _emit_frac(g: _Gen, at: str, fsp: int, ind: int) -> None:
    """Fractional seconds (big-endian, fsp digits) -> `us` microseconds."""
    n = temporal.frac_bytes(fsp)
    if n == 0:
        g.emit("us = 0", ind)
    elif n == 1:
        g.emit(f"us = buf[{at}] * 10000", ind)
    elif n == 2:
        g.emit(f"us = ((buf[{at}] << 8) | buf[{at} + 1]) * 100", ind)
    else:
        g.emit(f"us = (buf[{at}] << 16) | (buf[{at} + 1] << 8) | buf[{at} + 2]", ind)


def _emit_text(g: _Gen, c: ColumnInfo, var: str, ind: int, blob: bool = False) -> None:
    if c.is_json:
        # MariaDB's JSON is LONGTEXT checked by json_valid(): the stored text is the value
        # (what SELECT returns); JSON output parses it (changes.py).
        g.emit(f"{var} = {var}.decode('utf-8')", ind)
        return
    if c.collation is None:
        if blob and not c.is_json:
            return  # BLOB vs TEXT is unknown without metadata: keep the exact bytes
        fn = g.bind(_text_or_bytes("utf-8"), "c")
        g.emit(f"{var} = {fn}({var})", ind)
        return
    codec = codec_for(c.collation)
    if codec is None:
        return  # binary collation: bytes
    g.emit(f"{var} = {var}.decode({codec!r})", ind)


def _vector(data: bytes) -> list[float]:
    if len(data) % 4:
        raise DecodeError(f"VECTOR value of {len(data)} bytes is not a multiple of 4")
    return list(struct.unpack(f"<{len(data) // 4}f", data))


_CACHE: dict[tuple[Any, ...], RowDecoder] = {}
_CACHE_MAX = 4096


def _signature(columns: Sequence[ColumnInfo]) -> tuple[Any, ...]:
    return tuple((c.type, c.meta, c.unsigned, c.collation, c.enum_values, c.set_values, c.is_json,
                  c.plugin_type) for c in columns)


def compile_row_decoder(columns: Sequence[ColumnInfo], present: Sequence[bool],
                        partial_json: frozenset[int] = frozenset()) -> RowDecoder:
    """Build `decode(buf, pos) -> (values over all columns, new pos)` for one row image.

    With the C extension (`switches.c`) the decoder is a `RowDecoder` that also has
    `many(buf, pos, end, out[, after])` for a whole event; without it (or with
    BINLAKE_PURE_PYTHON=1) it is generated Python code with the same results.

    Servers repeat the TABLE_MAP in every transaction; decoders are cached by the table's
    shape, so each shape is compiled once per process.
    """
    c = switches.c
    key = (c is None, _signature(columns), tuple(present), partial_json)
    fn = _CACHE.get(key)
    if fn is None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        if c is not None:
            fn = c.RowDecoder(_c_ops(columns, present, partial_json))
        else:
            fn = _compile(columns, present, partial_json)
        _CACHE[key] = fn
    return fn


def compile_python_row_decoder(columns: Sequence[ColumnInfo], present: Sequence[bool],
                               partial_json: frozenset[int] = frozenset()) -> RowDecoder:
    """The pure-Python decoder, always (the reference the C decoder is tested against)."""
    return _compile(columns, present, partial_json)


def compile_c_row_decoder(columns: Sequence[ColumnInfo], present: Sequence[bool],
                          partial_json: frozenset[int] = frozenset()) -> RowDecoder | None:
    """The C decoder, or None when the extension is not built."""
    if _c_module is None:
        return None
    dec: RowDecoder = _c_module.RowDecoder(_c_ops(columns, present, partial_json))
    return dec


def compile_json_row_decoder(columns: Sequence[ColumnInfo], names: Sequence[str],
                             present: Sequence[bool], lines: bool = False) -> RowDecoder | None:
    """A C decoder that also writes row images straight to CDC JSON text (`json_many`), or
    None without the extension: the Arrow path then encodes the Python values instead.
    `lines`: what the C writer does not write itself (NaN, zero dates, ...) written as the
    JSON lines of `decode` have it (cdcjson.jsonl_value_text), not as the Arrow images."""
    cmod = switches.c
    if cmod is None:
        return None
    prepare_float_text()
    key = ("json", lines, _signature(columns), tuple(names), tuple(present))
    fn = _CACHE.get(key)
    if fn is None:
        from ...cdc.jsontext import json_string, jsonl_value_text, value_text_function

        text_of = jsonl_value_text if lines else value_text_function
        ops = []
        for c, name, op in zip(columns, names, _c_ops(columns, present, frozenset())):
            labels = op[4] if op[0] in (OP_ENUM, OP_SET) else None
            jlabels = (tuple(json_string(x)[1:-1].encode() for x in labels)
                       if labels is not None else None)
            ops.append((*op, text_of(c), (json_string(name) + ":").encode(), jlabels))
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        fn = _CACHE[key] = cmod.RowDecoder(ops)
    return fn


# -- the C decoder's column ops (see _speedups.c) --------------------------------------------

(OP_ABSENT, OP_INT, OP_FLOAT, OP_DOUBLE, OP_YEAR, OP_STR, OP_ENUM, OP_SET, OP_BIT, OP_DATE,
 OP_DATETIME2, OP_TIMESTAMP2, OP_TIME2, OP_DECIMAL, OP_LENCALL, OP_NONE, OP_POSCALL) = range(17)
(TXT_BYTES, TXT_UTF8, TXT_CODEC, TXT_UTF8_OR_BYTES, TXT_CHARMAP, TXT_UUID, TXT_INET6,
 TXT_INET4) = range(8)
_PLUGIN_MODES = {"uuid": TXT_UUID, "inet6": TXT_INET6, "inet4": TXT_INET4}
_INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}


def _text_mode(c: ColumnInfo, blob: bool) -> tuple[int, Any]:
    if c.is_json:
        return TXT_UTF8, None
    if c.collation is None:
        return (TXT_BYTES, None) if blob else (TXT_UTF8_OR_BYTES, None)
    codec = codec_for(c.collation)
    if codec is None:
        return TXT_BYTES, None
    if codecs.lookup(codec).name == "utf-8":
        return TXT_UTF8, None
    table = _charmap_table(codec)
    if table is not None:
        return TXT_CHARMAP, table
    return TXT_CODEC, codec


def _charmap_table(codec: str) -> str | None:
    """The decoding table of a single-byte charmap codec (cp1252, ...), if it is one."""
    import importlib

    name = codecs.lookup(codec).name.replace("-", "_")
    try:
        mod = importlib.import_module(f"encodings.{name}")
    except ImportError:
        return None
    table = getattr(mod, "decoding_table", None)
    return table if isinstance(table, str) and len(table) == 256 else None


def _string_max_len(c: ColumnInfo) -> int:
    if c.type == T.STRING:
        b0, b1 = c.meta >> 8, c.meta & 0xFF
        return b1 | ((((b0 & 0x30) ^ 0x30) << 4) if (b0 & 0x30) != 0x30 else 0)
    return c.meta


def _c_op(c: ColumnInfo, partial_json: bool) -> tuple[int, int, int, int, Any]:
    t = c.type
    if t in _INT_SIZES:
        return (OP_INT, _INT_SIZES[t], int(bool(c.unsigned)), 0, None)
    if t == T.FLOAT:
        return (OP_FLOAT, 0, 0, 0, None)
    if t == T.DOUBLE:
        return (OP_DOUBLE, 0, 0, 0, None)
    if t == T.YEAR:
        return (OP_YEAR, 0, 0, 0, None)
    if t == T.NEWDECIMAL:
        decimal_decoder(c.precision, c.scale)  # validates the metadata (DecodeError)
        return (OP_DECIMAL, c.precision, c.scale, 0, None)
    if t in (T.DATE, T.NEWDATE):
        return (OP_DATE, 0, 0, 0, None)
    if t == T.DATETIME2:
        return (OP_DATETIME2, c.fsp, 0, 0, None)
    if t == T.TIMESTAMP2:
        return (OP_TIMESTAMP2, c.fsp, 0, 0, None)
    if t == T.TIME2:
        return (OP_TIME2, c.fsp, 0, 0, None)
    if t in (T.VARCHAR, T.VAR_STRING, T.STRING):
        max_len = _string_max_len(c)
        width = _plugin_width(c)
        if width:  # UUID/INET: the pad is the type's width, the mode its text
            return (OP_STR, 1, width, _PLUGIN_MODES[str(c.plugin_type)], None)
        pad = max_len if t == T.STRING and c.collation == 63 else 0
        mode, codec = _text_mode(c, blob=False)
        return (OP_STR, 1 if max_len < 256 else 2, pad, mode, codec)
    if t in (T.ENUM, T.SET):
        labels = c.enum_values if t == T.ENUM else c.set_values
        return (OP_ENUM if t == T.ENUM else OP_SET, c.meta & 0xFF, 0, 0,
                tuple(labels) if labels is not None else None)
    if t == T.BIT:
        return (OP_BIT, (c.meta >> 8) + (1 if c.meta & 0xFF else 0), 0, 0, None)
    if t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        mode, codec = _text_mode(c, blob=True)
        return (OP_STR, c.meta, 0, mode, codec)
    if t == T.JSON:
        return (OP_LENCALL, c.meta, 0, 0, None if partial_json else _json_decoder())
    if t == T.GEOMETRY:
        return (OP_LENCALL, c.meta, 0, 0, Geometry.from_storage)
    if t == T.VECTOR:
        return (OP_LENCALL, c.meta, 0, 0, _vector)
    if t == T.NULL:
        return (OP_NONE, 0, 0, 0, None)
    return (OP_POSCALL, 0, 0, 0, _column_function(c, partial_json))


def _column_function(c: ColumnInfo, partial_json: bool) -> Callable[[Any, int], tuple[Any, int]]:
    """Any other type: the generated Python code for that one column."""
    g = _Gen()
    g.emit("def decode_column(buf, p):", 0)
    _emit_column(g, c, "v", 1, partial_json)
    g.emit("return v, p", 1)
    exec(compile("\n".join(g.lines), "<binlake column decoder>", "exec"), g.ns)
    fn: Callable[[Any, int], tuple[Any, int]] = g.ns["decode_column"]
    return fn


def _c_ops(columns: Sequence[ColumnInfo], present: Sequence[bool],
           partial_json: frozenset[int]) -> list[tuple[int, int, int, int, Any]]:
    ops = []
    for c, on in zip(columns, present):
        if not on:
            ops.append((OP_ABSENT, 0, 0, 0, None))
            continue
        op = _c_op(c, c.index in partial_json)
        if op[0] in (OP_INT, OP_BIT, OP_ENUM, OP_SET) and not 1 <= op[1] <= 8:
            op = (OP_POSCALL, 0, 0, 0, _column_function(c, c.index in partial_json))
        ops.append(op)
    return ops




def _compile(columns: Sequence[ColumnInfo], present: Sequence[bool],
             partial_json: frozenset[int]) -> RowDecoder:
    g = _Gen()
    present_cols = [c for c, on in zip(columns, present) if on]
    nbytes = (len(present_cols) + 7) // 8
    g.emit("def decode_row(buf, p):", 0)
    g.emit(f"nb = buf[p:p + {nbytes}]; p += {nbytes}", 1)
    k = 0
    names = []
    for c, on in zip(columns, present):
        var = f"v{c.index}"
        names.append(var)
        if not on:
            g.emit(f"{var} = ABSENT", 1)
            continue
        g.emit(f"if nb[{k >> 3}] & {1 << (k & 7)}:", 1)
        g.emit(f"{var} = None", 2)
        g.emit("else:", 1)
        _emit_column(g, c, var, 2, c.index in partial_json)
        k += 1
    g.emit(f"return ({', '.join(names)}{',' if len(names) == 1 else ''}), p", 1)
    source = "\n".join(g.lines)
    code = compile(source, "<binlake row decoder>", "exec")
    exec(code, g.ns)
    fn = g.ns["decode_row"]
    fn.__source__ = source
    decode: RowDecoder = fn
    return decode
