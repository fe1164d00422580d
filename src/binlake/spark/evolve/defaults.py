"""What MariaDB put into existing rows for an added column (DEFAULT or implicit default)."""

from __future__ import annotations

import base64
import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from ...binlog.columns import fixedbin
from ...schema import ddl as sqlddl
from ...schema.spec import BINARY_TYPES, INTEGER_TYPES, TEMPORAL_TYPES, TEXT_TYPES, ColumnSpec
from .statement import Added


_TIME = re.compile(r"^(-?)(\d{1,3}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$")
_DATETIME = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})"
                       r"(?:\.(\d{1,6}))?)?$")
_NOW = ("CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME")


def zero_date(text: str) -> bool:
    m = _DATETIME.match(text)
    return bool(m) and (int(m.group(2)) == 0 or int(m.group(3)) == 0)


def evaluate_default(added: Added, col: ColumnSpec, ts: int | None
                     ) -> tuple[str | None, str | None]:
    """What MariaDB put into the existing rows for a new column, as image text (the JSON
    text the binlog would carry; None = NULL), or (None, why binlake cannot tell)."""
    p = added.spec
    if p is None:
        return None, "the statement was not understood (or the change came without one)"
    if p.generated:
        return None, f"it is a {p.generated} generated column"
    if p.auto_increment:
        return None, "AUTO_INCREMENT numbers the existing rows"
    if added.default is None:
        if col.nullable:
            return None, None
        return implicit_default(col, p.values or ())
    return _literal(list(added.default), col, p, ts)


def implicit_default(col: ColumnSpec, labels: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The implicit default of a NOT NULL column (what existing rows get without DEFAULT)."""
    t = col.type
    if t in INTEGER_TYPES or t in ("decimal", "float", "double", "bit", "year"):
        return "0", None
    if t == "enum":
        return (labels[0] if labels else ""), None
    if t in TEXT_TYPES or t == "json":
        return "", None
    if t in BINARY_TYPES and t != "binary":
        return "", None
    if t in fixedbin.WIDTHS:  # UUID/INET: all zero bytes ('::', '0.0.0.0', ...)
        return fixedbin.text_function(t)(b""), None
    frac = "." + "0" * col.fsp if col.fsp else ""
    if t == "date":
        return "0000-00-00", None
    if t == "datetime":
        return "0000-00-00 00:00:00" + frac, None
    if t == "time":
        return "00:00:00" + frac, None
    return None, f"the implicit default of a NOT NULL {t} column is not known to binlake"


def _literal(toks: list[sqlddl.Tok], col: ColumnSpec, p: sqlddl.ColumnSpec, ts: int | None
             ) -> tuple[str | None, str | None]:
    text = " ".join(t.text for t in toks)
    unknown = (None, f"its DEFAULT {text} is an expression binlake does not evaluate")
    while len(toks) >= 2 and toks[0].kind == "op" and toks[0].text == "(" \
            and toks[-1].kind == "op" and toks[-1].text == ")":
        toks = toks[1:-1]
    negative = False
    while toks and toks[0].kind == "op" and toks[0].text in ("-", "+"):
        negative ^= toks[0].text == "-"
        toks = toks[1:]
    if not toks:
        return unknown
    first, t = toks[0], col.type
    if first.kind == "word" and first.up in _NOW and (
            len(toks) == 1 or [x.text for x in toks[1:]] in (["(", ")"], ["(", str(col.fsp), ")"])):
        if t == "timestamp" and col.fsp == 0 and ts is not None:
            when = dt.datetime.fromtimestamp(ts, dt.timezone.utc)
            return when.strftime("%Y-%m-%dT%H:%M:%SZ"), None
        return None, (f"its DEFAULT {text} is the statement's time, which the binlog gives in "
                      "whole seconds and (for DATETIME) without its time zone")
    if len(toks) == 1 and first.kind == "word" and first.up == "NULL" and not negative:
        return None, None
    kind: str
    if len(toks) == 1 and first.kind == "word" and first.up in ("TRUE", "FALSE"):
        kind, value = "num", "1" if first.up == "TRUE" else "0"
    elif all(x.kind == "str" for x in toks) or (
            first.kind == "word" and first.text.startswith("_") and len(toks) > 1
            and all(x.kind == "str" for x in toks[1:])):
        kind, value = "str", "".join(x.text for x in toks if x.kind == "str")
    elif len(toks) == 1 and first.kind in ("num", "hex", "bit"):
        kind, value = first.kind, first.text
    else:
        return unknown
    if negative and kind != "num":
        return unknown
    number: Decimal | None = None
    try:
        if kind == "num":
            number = Decimal(("-" if negative else "") + value)
        elif kind == "hex" and t not in TEXT_TYPES and t not in BINARY_TYPES:
            number = Decimal(int(value, 16))
        elif kind == "bit":
            number = Decimal(int(value, 2))
        elif kind == "str" and (t in INTEGER_TYPES or t in ("decimal", "float", "double", "year")):
            number = Decimal(value.strip())
    except (InvalidOperation, ValueError):
        return unknown
    if t in INTEGER_TYPES or t in ("bit", "year"):
        if number is None:
            return unknown
        n = int(number.quantize(Decimal(1), rounding=ROUND_HALF_UP))
        if t == "year" and not (n == 0 or 1901 <= n <= 2155):
            return unknown  # two-digit years
        return str(n), None
    if t in ("decimal", "float", "double"):
        return (format(number, "f"), None) if number is not None else unknown
    if t == "enum":
        labels = p.values or ()
        if kind == "str":
            match = [label for label in labels if label.lower() == value.lower()]
            return (match[0], None) if match else unknown
        if number is not None and number == int(number) and 1 <= int(number) <= len(labels):
            return labels[int(number) - 1], None
        return unknown
    if t == "set":
        labels = p.values or ()
        if kind != "str":
            return unknown
        parts = {v.lower() for v in value.split(",") if v}
        if not parts <= {label.lower() for label in labels}:
            return unknown
        return ",".join(label for label in labels if label.lower() in parts), None
    if t in TEXT_TYPES or t == "json":
        if kind == "str":
            return (value.rstrip(" ") if t == "char" else value), None
        if kind == "num" and "e" not in value.lower():
            return ("-" if negative else "") + value, None
        if kind == "hex":
            try:
                return bytes.fromhex(value).decode("utf-8"), None
            except ValueError:
                return unknown
        return unknown
    if t in BINARY_TYPES and t != "binary":
        if kind == "str":
            return base64.b64encode(value.encode("utf-8")).decode("ascii"), None
        if kind == "hex":
            return base64.b64encode(bytes.fromhex(value)).decode("ascii"), None
        return unknown
    if kind != "str":
        return unknown
    if t in fixedbin.WIDTHS:
        raw = _fixed_binary(t, value)
        return (fixedbin.text_function(t)(raw), None) if raw is not None else unknown
    if t == "time":
        m = _TIME.match(value.strip())
        if not m or len(m.group(5) or "") > col.fsp:
            return unknown
        frac = "." + (m.group(5) or "").ljust(col.fsp, "0") if col.fsp else ""
        return (f"{m.group(1)}{int(m.group(2)):02d}:{int(m.group(3)):02d}:"
                f"{int(m.group(4)):02d}{frac}"), None
    if t in TEMPORAL_TYPES:
        m = _DATETIME.match(value.strip())
        if not m or len(m.group(7) or "") > col.fsp:
            return unknown
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        date = f"{y:04d}-{mo:02d}-{d:02d}"
        if t == "date":
            return (date, None) if m.group(4) is None else unknown
        hh, mi, ss = (int(m.group(i) or 0) for i in (4, 5, 6))
        frac = "." + (m.group(7) or "").ljust(col.fsp, "0") if col.fsp else ""
        if zero_date(date):
            return f"{date} {hh:02d}:{mi:02d}:{ss:02d}{frac}", None
        if t == "timestamp":
            return None, (f"its DEFAULT {text} is a TIMESTAMP in the statement's session time "
                          "zone, which the binlog does not carry")
        return f"{date}T{hh:02d}:{mi:02d}:{ss:02d}{frac}", None
    return unknown


def _fixed_binary(t: str, text: str) -> bytes | None:
    """A UUID/INET6/INET4 literal as MariaDB reads it -> its bytes (None: not one binlake
    reads as the server does)."""
    import ipaddress

    if t == "uuid":  # hex digit pairs, hyphens between them
        digits = text.replace("-", "")
        if len(digits) != 32 or text[:1] == "-" or text[-1:] == "-" or not all(
                c in "0123456789abcdefABCDEF" for c in digits):
            return None
        return bytes.fromhex(digits)
    if t == "inet4":  # four decimal groups of 1-3 digits (leading zeros allowed)
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() and len(p) <= 3 and int(p) <= 255
                                      for p in parts):
            return None
        return bytes(int(p) for p in parts)
    if "%" in text:  # a scope id: not an INET6 value
        return None
    try:
        return ipaddress.IPv6Address(text).packed
    except ValueError:
        return None
