"""The CDC JSON text of one value, per column type: what `before`/`after` images carry.

Shared by the Arrow builder (spark/arrow.py), the snapshot reader and the C image encoder
(binlog/columns/_speedups.c writes the common types itself and calls these for the rest),
so every path writes byte-identical images.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

from .binlog.constants import ColumnType as T
from .changes import formatter_for, json_value


def json_text(v: Any) -> Any:
    """A JSON column value as JSON text (MariaDB's JSON is LONGTEXT: already text)."""
    if isinstance(v, str):
        return v
    return json.dumps(json_value(v), ensure_ascii=False, separators=(",", ":"))


dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
json_string = json.encoder.encode_basestring  # type: ignore[attr-defined]  # C: str -> JSON string


def datetime_text(fsp: int, utc: bool) -> Callable[[Any], str]:
    """DATETIME/TIMESTAMP text as binlake's JSON has it ('...T...' + fsp digits [+ 'Z']), via
    the C isoformat instead of strftime (the largest cost of encoding temporal rows)."""
    cut = 19 + (fsp + 1 if fsp else 0)
    zone = "Z" if utc else ""

    def text(v: Any) -> str:
        if type(v) is not dt.datetime:
            return v.text  # InvalidTemporal: zero dates keep MySQL's text
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
    return ns["text"]
