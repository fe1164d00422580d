"""The CDC JSON text of one value, per column type: what `before`/`after` images carry; and
the lines `decode` and `stream` print (--output jsonl and text), in C with a Python twin.

Shared by the Arrow builder (cdc/arrow.py), the snapshot reader and the C image encoder
(_speedups/ writes the common types itself and calls these for the rest),
so every path writes byte-identical images.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable, Literal

from ..binlog.constants import ColumnType as T
from .changes import formatter_for, json_value


def json_text(v: Any) -> str:
    """A JSON column value as JSON text (MariaDB's JSON is LONGTEXT: already text)."""
    if isinstance(v, str):
        return v
    return json.dumps(json_value(v), ensure_ascii=False, separators=(",", ":"))


dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
json_string: Callable[[str], str] = json.encoder.encode_basestring  # C: str -> JSON string


def datetime_text(fsp: int, utc: bool) -> Callable[[Any], str]:
    """DATETIME/TIMESTAMP text as binlake's JSON has it ('...T...' + fsp digits [+ 'Z']), via
    the C isoformat instead of strftime (the largest cost of encoding temporal rows)."""
    cut = 19 + (fsp + 1 if fsp else 0)
    zone = "Z" if utc else ""

    def text(v: Any) -> str:
        if type(v) is not dt.datetime:
            zero: str = v.text  # InvalidTemporal: zero dates keep MySQL's text
            return zero
        return v.isoformat(timespec="microseconds")[:cut] + zone
    return text


def value_expr(c: Any, name: str, ns: dict[str, Any]) -> str:
    """Python expression turning `v` (not None, not ABSENT) into JSON text for column c."""
    t = c.type
    generic = ns.setdefault(f"f_{name}", formatter_for(c))
    ns[f"g_{name}"] = lambda v, f=generic: dumps(f(v))
    if c.type == T.JSON or c.is_json:
        ns[f"j_{name}"] = json_text
        return f"json_string(j_{name}(v))"
    if t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.YEAR):
        return f"str(v) if type(v) is int else g_{name}(v)"
    if t == T.DOUBLE:
        return "repr(v)"
    if t == T.FLOAT:
        return f"repr(f_{name}(v))"
    if t == T.NEWDECIMAL:
        return "'\"' + format(v, 'f') + '\"'"
    if t in (T.DATE, T.NEWDATE):
        return "'\"' + (v.isoformat() if type(v) is _date else v.text) + '\"'"
    if t in (T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2):
        ns[f"d_{name}"] = datetime_text(c.fsp, t in (T.TIMESTAMP, T.TIMESTAMP2))
        return f"'\"' + d_{name}(v) + '\"'"
    if t in (T.VARCHAR, T.VAR_STRING, T.STRING, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB,
             T.LONG_BLOB, T.ENUM, T.SET):
        return f"json_string(v) if type(v) is str else g_{name}(v)"
    return f"g_{name}(v)"


def value_text_function(c: Any) -> Callable[[Any], str]:
    """`value -> JSON text` for one column (value not None, not ABSENT)."""
    ns: dict[str, Any] = {"json_string": json_string, "_date": dt.date}
    expr = value_expr(c, "c", ns)
    exec(compile(f"def text(v):\n    return {expr}\n", "<binlake value text>", "exec"), ns)
    text: Callable[[Any], str] = ns["text"]
    return text


# -- JSON lines of change records (`decode` and `stream` --output jsonl) ----------------------

def record_line(rec: Any) -> str:
    """One record's JSON line, without its newline: the reference, and the pure-Python twin
    of the C writer (records_jsonl)."""
    return json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


def records_jsonl_python(records: Any) -> bytes:
    """records_jsonl in Python only."""
    return "".join([record_line(r) + "\n" for r in records]).encode("utf-8")


def record_text(rec: Any) -> str:
    """One record's lines of --output text, without the last newline: the reference, and
    the pure-Python twin of the C writer (records_text)."""
    d = rec.to_json_dict()
    lines = [f"### {rec.op.upper()} {rec.schema}.{rec.table}  at {rec.file}:{rec.pos} row {rec.row}"
             + (f" gtid {rec.gtid}" if rec.gtid else "")]
    for part in ("before", "after"):
        if part in d:
            lines.append(f"###   {part}:")
            for k, v in d[part].items():
                lines.append(f"###     {k}={json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines)


def records_text_python(records: Any) -> bytes:
    """records_text in Python only."""
    return "".join([record_text(r) + "\n" for r in records]).encode("utf-8")


# kinds of jsonl_plan (speedups/jsonl_lines.h)
_JK_GENERIC, _JK_ANY, _JK_FLOAT, _JK_DECIMAL, _JK_DATE, _JK_DATETIME, _JK_TIMESTAMP, _JK_TIME = range(8)


def _plan_kind(c: Any) -> int:
    """How the C writer writes column c's common values (formatter_for's rules)."""
    t = c.type
    if c.is_json:
        return _JK_GENERIC
    if t == T.FLOAT:
        return _JK_FLOAT
    if t == T.NEWDECIMAL:
        return _JK_DECIMAL
    if t in (T.DATETIME2, T.DATETIME):
        return _JK_DATETIME
    if t in (T.TIMESTAMP2, T.TIMESTAMP):
        return _JK_TIMESTAMP
    if t in (T.TIME2, T.TIME):
        return _JK_TIME
    if t in (T.DATE, T.NEWDATE):
        return _JK_DATE
    return _JK_ANY


Plan = tuple[tuple[bytes, ...], bytes, bytes, tuple[Callable[[Any], str], ...]]


def jsonl_plan(tm: Any) -> Plan | None:
    """What the C writer needs of a table's images, made once per TABLE_MAP: per column its
    JSON key ('"name":'), its kind, its fsp and its Python formatter (value -> JSON text) for
    values of other types. None (every record of the table written by record_line): column
    names that repeat, which a dict would merge."""
    return _plan(tm, "jsonl-plan", lambda n: (json_string(n) + ":").encode("utf-8"), dumps)


def text_plan(tm: Any) -> Plan | None:
    """jsonl_plan for --output text: each key starts a value's line, and JSON documents
    have json.dumps' default separators."""
    return _plan(tm, "text-plan", lambda n: f"###     {n}=".encode("utf-8"), _dumps_spaced)


def _dumps_spaced(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _plan(tm: Any, key: str, column_key: Callable[[str], bytes],
          encode: Callable[[Any], str]) -> Plan | None:
    cached: Plan | None | Literal[False] = tm.row_decoders.get(key, False)
    if cached is not False:
        return cached
    names = list(tm.column_names)
    plan = None
    if len(set(names)) == len(names) and len(names) == len(tm.columns):
        keys = tuple(column_key(n) for n in names)
        kinds = bytes(_plan_kind(c) for c in tm.columns)
        fsps = bytes(min(max(int(c.fsp or 0), 0), 255) for c in tm.columns)
        fmts = tuple(_value_text(formatter_for(c), encode) for c in tm.columns)
        plan = (keys, kinds, fsps, fmts)
    tm.row_decoders[key] = plan
    return plan


def images_for(output: str) -> str | bool:
    """The `json_images` of a decoder whose records are printed as `output`: "lines" (each
    image decoded straight to its JSON text, which records_jsonl copies) for jsonl with the
    C writer, else False (value tuples: the Python twin formats those)."""
    return "lines" if output == "jsonl" and records_jsonl is not records_jsonl_python else False


def _value_text(fmt: Callable[[Any], Any], encode: Callable[[Any], str]) -> Callable[[Any], str]:
    return lambda v: encode(fmt(v))


def jsonl_value_text(c: Any) -> Callable[[Any], str]:
    """`value -> JSON text` for column c as the JSON lines have it (value_text_function's
    twin for json_images="lines": NaN as json.dumps writes it, not repr)."""
    return _value_text(formatter_for(c), dumps)


def _load_writers() -> tuple[Callable[[Any], bytes], Callable[[Any], bytes]]:
    from .._speedups.native import function, prepare_float_text

    jsonl: Callable[..., bytes] | None = function("jsonl_records")
    text: Callable[..., bytes] | None = function("text_records")
    if jsonl is None or text is None:
        return records_jsonl_python, records_text_python
    prepare_float_text()

    def records_jsonl(records: Any) -> bytes:
        return jsonl(records, jsonl_plan, record_line)

    def records_text(records: Any) -> bytes:
        return text(records, text_plan, record_text)
    return records_jsonl, records_text


records_jsonl, records_text = _load_writers()
"""Change records -> the UTF-8 bytes of their JSON lines (each ending in a newline), as
record_line writes them, and of their --output text lines, as record_text: in C with the
extension (speedups/jsonl_lines.h)."""
