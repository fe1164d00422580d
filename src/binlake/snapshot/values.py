"""SELECT values -> the JSON text the binlog path writes for the same value, and key bounds
as SQL parameters."""
from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any, Callable, Sequence

# The binlog path's own JSON encoders, so both paths write the same bytes for the same value.
from ..cdc.jsontext import dumps, json_string, json_text
from ..cdc.changes import float32_text, json_value
from ..schema.spec import (
    BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, SERVER_TEXT_TYPES, TEXT_TYPES, ColumnSpec,
)
from ..binlog.values import Geometry
from .server import SnapshotError, quote_name
from .tables import SnapshotTable


# -- values: SELECT text -> the JSON the binlog path produces -----------------------------------

def server_text(v: bytes | str) -> str:
    """A UUID/INET6/INET4 value as SELECT returns it (the server's text, maybe as bytes): the
    text the binlog path writes for it."""
    return v.decode("ascii") if isinstance(v, bytes) else v


def select_expr(col: ColumnSpec) -> str:
    if col.type == "float":
        # FLOAT prints with 6 digits; its exact value as DOUBLE round-trips.
        return f"CAST({quote_name(col.name)} AS DOUBLE) AS {quote_name(col.name)}"
    return quote_name(col.name)


def _temporal(utc: bool) -> Callable[[str], str]:
    zone = "Z" if utc else ""

    def text(s: str) -> str:
        try:  # what the decoder can hold becomes ISO; zero dates keep MySQL's text
            dt.date(int(s[0:4]), int(s[5:7]), int(s[8:10]))
        except ValueError:
            return json_string(s)
        return json_string(s.replace(" ", "T", 1) + zone)
    return text


def fragment_fn(col: ColumnSpec, mariadb: bool = False) -> Callable[[Any], str]:
    """Raw SELECT value (not NULL) -> the JSON text arrow.image_encoder writes for the same
    value decoded from the binlog (see there: the two must agree byte for byte)."""
    t = col.type
    if t in INTEGER_TYPES or t == "year":
        return lambda s: str(int(s))
    if t == "bit":
        return lambda b: str(int.from_bytes(b, "big"))
    if t == "float":
        return lambda s: repr(float32_text(float(s)))
    if t == "double":
        return lambda s: repr(float(s))
    if t == "decimal":
        return lambda s: '"' + format(Decimal(s), "f") + '"'
    if t == "date":
        return lambda s: json_string(s)
    if t in ("datetime", "timestamp"):
        return _temporal(t == "timestamp")
    if t == "time":
        return json_string
    if t == "json":
        if mariadb:
            return json_string  # stored text, exactly as the binlog carries it
        return lambda s: json_string(json_text(json.loads(s)))
    if t in BINARY_TYPES:
        return lambda b: '"' + base64.b64encode(b).decode("ascii") + '"'
    if t in SERVER_TEXT_TYPES:
        return lambda s: json_string(server_text(s))
    if t in GEOMETRY_TYPES:
        return lambda b: dumps(json_value(Geometry.from_storage(b)))
    if t in TEXT_TYPES:
        return json_string
    raise SnapshotError(f"column {col.name}: type {t} is not supported by the snapshot")


def literal_fn(col: ColumnSpec) -> Callable[[Any], Any]:
    """Raw SELECT value of a key column -> a SQL parameter compared with the column's own type
    (an int stays an int: a quoted number would be compared as a double)."""
    t = col.type
    if t in INTEGER_TYPES or t == "year":
        return int
    if t == "decimal":
        return Decimal
    if t in ("float", "double"):
        return float
    return lambda v: v  # text (temporal, char: the column's collation), bytes (_binary)


class RowFormatter:
    """SELECT rows of one table -> (key, after-image JSON), cheap per row."""

    def __init__(self, t: SnapshotTable) -> None:
        self.table = t
        cols = t.spec.columns
        self.names = [c.name for c in cols]
        self.select_list = ", ".join(select_expr(c) for c in cols)
        self._prefix = [json_string(c.name) + ":" for c in cols]
        self._fns = [fragment_fn(c, t.mariadb) for c in cols]
        self._key_idx = [self.names.index(k) for k in t.key]

    def key(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        """The row's key as the JSON values a binlog image of it carries."""
        return tuple(json.loads(self._fns[i](raw[i])) for i in self._key_idx)

    def image(self, raw: Sequence[Any]) -> tuple[tuple[Any, ...], str]:
        frags = [p + ("null" if v is None else f(v))
                 for p, f, v in zip(self._prefix, self._fns, raw)]
        text = "{" + ",".join(frags) + "}"
        key = tuple(json.loads(frags[i][len(self._prefix[i]):]) for i in self._key_idx)
        return key, text


def bound_json(t: SnapshotTable, bound: Sequence[Any]) -> tuple[Any, ...]:
    """A bound's raw values as the JSON values a key image carries."""
    cols = [t.spec.column(k) for k in t.key]
    return tuple(json.loads(fragment_fn(c)(_raw_back(c, v))) for c, v in zip(cols, bound))


def _raw_back(col: ColumnSpec, v: Any) -> Any:
    """A bound parameter back to SELECT text (ints/decimals/floats were parsed from it)."""
    if isinstance(v, (bytes, str)):
        return v
    if isinstance(v, float):
        return repr(v)
    return str(v)
