"""Table shapes as JSON: the shape a ddl record gives, and the one stored in a Delta table."""

from __future__ import annotations

import json
from typing import Any

from ...schema import ddl as sqlddl
from ..tables import ApplyError
from ...schema.spec import TEXT_TYPES, ColumnSpec, TableSpec


MARK_PROP = "binlake.ddl.position"
SHAPE_PROP = "binlake.ddl.shape"


def col_json(c: ColumnSpec) -> dict[str, Any]:
    d: dict[str, Any] = {"name": c.name, "type": c.type}
    if c.unsigned:
        d["unsigned"] = True
    if c.precision is not None:
        d["precision"] = c.precision
    if c.scale is not None:
        d["scale"] = c.scale
    if c.fsp:
        d["fsp"] = c.fsp
    if not c.nullable:
        d["nullable"] = False
    return d


def col_from_json(c: dict[str, Any]) -> ColumnSpec:
    return ColumnSpec(c["name"], c["type"], bool(c.get("unsigned")), c.get("precision"),
                      c.get("scale"), int(c.get("fsp") or 0), bool(c.get("nullable", True)))


def shape_json(spec: TableSpec) -> str:
    """A TableSpec as JSON (what `binlake.ddl.shape` holds)."""
    return json.dumps({"schema": spec.schema, "table": spec.table,
                       "columns": [col_json(c) for c in spec.columns],
                       "primary_key": list(spec.primary_key)},
                      ensure_ascii=False, separators=(",", ":"))


def shape_from_json(text: str) -> TableSpec:
    d = json.loads(text)
    return TableSpec(d["schema"], d["table"], tuple(col_from_json(c) for c in d["columns"]),
                     tuple(d.get("primary_key") or ()))


def spec_from_entry(entry: dict[str, Any]) -> TableSpec | None:
    """A ddl record's table entry (`_change_json`) -> the table's new shape (None: dropped)."""
    if entry.get("columns") is None:
        return None
    cols = []
    for c in entry["columns"]:
        parsed = parse_type(entry, c)
        kind = "json" if c.get("json") else parsed.type
        if kind in TEXT_TYPES and str(c.get("charset") or "").lower() == "binary":
            kind = {"char": "binary", "varchar": "varbinary"}.get(kind, "blob")
        precision = parsed.length if kind == "bit" else parsed.precision
        cols.append(ColumnSpec(c["name"], kind, bool(parsed.unsigned), precision, parsed.scale,
                               parsed.fsp or 0, bool(c.get("nullable", True))))
    return TableSpec(entry["schema"], entry["table"], tuple(cols),
                     tuple(entry.get("primary_key") or ()))


def parse_type(entry: dict[str, Any], c: dict[str, Any]) -> sqlddl.ColumnSpec:
    try:
        return sqlddl.parse_column_type(c["type"], c["name"])
    except sqlddl.DdlParseError as exc:
        raise ApplyError(f"{entry['schema']}.{entry['table']}: a ddl record gives column "
                         f"{c['name']!r} the type {c['type']!r}, which binlake cannot read: "
                         f"{exc}") from None
