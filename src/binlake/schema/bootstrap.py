"""The schema at a known binlog position, read from the server's information_schema.

DDL replay needs a starting point: the shapes of all tables at the position where reading
starts. information_schema is not versioned, so the read is bracketed by two binlog positions
and repeated when a DDL landed in between (or done under FLUSH TABLES WITH READ LOCK when the
caller allows a short global lock). The same helpers re-read single tables later, when a DDL
statement cannot be parsed and the server is the only trustworthy source.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from ..errors import SchemaError
from .ddl import (
    DdlParseError, Ignored, TableRef, guess_tables, implicit_period_columns, iter_statement_tables,
    parse, parse_column_type, resolve_column,
)
from .history import BinlogPos, SchemaHistory, file_seq
from .model import Catalog, Collations, DatabaseDef, Index, TableDef

SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
TableFilter = Callable[[str, str], bool]
_SYS_LIST = ",".join(f"'{s}'" for s in sorted(SYSTEM_SCHEMAS))
_TableInfo = dict[tuple[str, str], tuple[str, str | None]]
"""(schema, table) key -> (TABLE_TYPE, TABLE_COLLATION) of the tables being read."""


def default_filter(schema: str, table: str) -> bool:
    """Track every table outside the server's own schemas."""
    return schema.lower() not in SYSTEM_SCHEMAS


def _rows(cur: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    cur.execute(sql, args)
    return [tuple(_text(v) for v in r) for r in cur.fetchall()]


def _text(v: Any) -> Any:
    return v.decode("utf-8") if isinstance(v, (bytes, bytearray)) else v


def server_info(cur: Any) -> dict[str, Any]:
    version, lctn, cs, coll = _rows(cur, "SELECT @@version, @@lower_case_table_names, "
                                         "@@character_set_server, @@collation_server")[0]
    return {"version": version, "flavor": "mariadb" if "mariadb" in str(version).lower() else "mysql",
            "lower_case_table_names": int(lctn), "charset": cs, "collation": coll}


def binlog_position(cur: Any) -> BinlogPos:
    """The server's current binlog end (SHOW MASTER STATUS; SHOW BINARY LOG STATUS on 8.4+)."""
    for stmt in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"):
        try:
            rows = _rows(cur, stmt)
        except Exception:  # noqa: BLE001 - the other spelling exists on the other servers
            continue
        if rows:
            return BinlogPos(str(rows[0][0]), int(rows[0][1]))
        raise SchemaError("the server has no binary log (log_bin is off)")
    raise SchemaError("cannot read the binlog position (SHOW MASTER STATUS failed)")


def gtid_at(cur: Any, pos: BinlogPos, flavor: str) -> str | None:
    try:
        if flavor == "mariadb":
            value = _rows(cur, "SELECT BINLOG_GTID_POS(%s, %s)", (pos.file, pos.pos))[0][0]
        else:
            value = _rows(cur, "SELECT @@GLOBAL.gtid_executed")[0][0]
    except Exception:  # noqa: BLE001 - GTIDs are informational here
        return None
    return None if value is None else str(value)


def read_collations(cur: Any) -> Collations:
    """The server's collation table: the ids TABLE_MAP metadata uses for its names."""
    c = Collations.builtin()
    colls = _rows(cur, "SELECT COLLATION_NAME, CHARACTER_SET_NAME, ID, IS_DEFAULT "
                       "FROM information_schema.COLLATIONS WHERE ID IS NOT NULL")
    charsets = _rows(cur, "SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, MAXLEN "
                          "FROM information_schema.CHARACTER_SETS")
    c.load_rows(((n, cs, i, str(d).lower() == "yes") for n, cs, i, d in colls), charsets)
    return c


def _in_clause(names: Iterable[str]) -> tuple[str, list[str]]:
    names = list(names)
    return ",".join(["%s"] * len(names)), names


def read_catalog(cur: Any, *, tables: TableFilter = default_filter,
                 only: Iterable[tuple[str, str]] | None = None,
                 info: dict[str, Any] | None = None, collations: Collations | None = None) -> Catalog:
    """Databases and tables from information_schema (`only`: just these (schema, table))."""
    info = info or server_info(cur)
    colls = collations or read_collations(cur)
    cat = Catalog(server_charset=info["charset"], server_collation=info["collation"],
                  lower_case_table_names=info["lower_case_table_names"], collations=colls)
    where = f"NOT IN ({_SYS_LIST})"
    args: list[str] = []
    if only is not None:
        pairs = list(only)
        if not pairs:
            return cat
        schemas = sorted({s for s, _ in pairs})
        ph, args = _in_clause(schemas)
        where = f"IN ({ph})"
    for name, cs, coll in _rows(cur, "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, "
                                     "DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
                                     f"WHERE SCHEMA_NAME {where}", args or None):
        cat.databases[cat.norm(name)] = DatabaseDef(cat.norm(name), cs, coll)
    wanted = None if only is None else {cat.key(s, t) for s, t in only}

    def keep(schema: str, table: str) -> bool:
        key = cat.key(schema, table)
        return tables(*key) and (wanted is None or key in wanted)

    tinfo: _TableInfo = {}
    for schema, table, ttype, coll in _rows(
            cur, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_COLLATION FROM "
                 f"information_schema.TABLES WHERE TABLE_SCHEMA {where} AND TABLE_TYPE "
                 "IN ('BASE TABLE', 'SYSTEM VERSIONED', 'SEQUENCE')", args or None):
        if keep(schema, table):
            tinfo[cat.key(schema, table)] = (str(ttype), coll)
    columns: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in _rows(cur, "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
                          "CHARACTER_SET_NAME, COLLATION_NAME, EXTRA, GENERATION_EXPRESSION "
                          f"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA {where} "
                          "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION", args or None):
        key = cat.key(row[0], row[1])
        if key in tinfo:
            columns.setdefault(key, []).append(row[2:])
    indexes = _read_indexes(cur, where, args, cat, tinfo)
    json_cols, json_checks = _read_json_checks(cur, where, args, cat, tinfo, info)
    for key, (ttype, tcoll) in tinfo.items():
        cat.tables[key] = _table_def(key, ttype, tcoll, columns.get(key, []), indexes.get(key, []),
                                     json_cols.get(key, set()), json_checks.get(key, []), colls)
    return cat


def _read_indexes(cur: Any, where: str, args: list[str], cat: Catalog,
                  tinfo: _TableInfo) -> dict[tuple[str, str], list[Index]]:
    parts: dict[tuple[str, str], dict[str, list[tuple[Any, ...]]]] = {}
    for schema, table, name, non_unique, seq, col, sub, itype in _rows(
            cur, "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, "
                 "COLUMN_NAME, SUB_PART, INDEX_TYPE FROM information_schema.STATISTICS "
                 f"WHERE TABLE_SCHEMA {where}", args or None):
        key = cat.key(schema, table)
        if key in tinfo:
            parts.setdefault(key, {}).setdefault(name, []).append(
                (int(seq), col, sub, int(non_unique), str(itype)))
    out: dict[tuple[str, str], list[Index]] = {}
    for key, by_name in parts.items():
        lst = []
        for name, ps in by_name.items():
            ps.sort()
            non_unique, itype = ps[0][3], ps[0][4].upper()
            kind = ("primary" if name == "PRIMARY" else "unique" if not non_unique
                    else "fulltext" if itype == "FULLTEXT" else "spatial" if itype == "SPATIAL"
                    else "key")
            lst.append(Index(name, kind, tuple(p[1] for p in ps),
                             tuple(int(p[2]) if p[2] is not None else None for p in ps)))
        lst.sort(key=lambda i: 0 if i.kind == "primary" else 1)
        out[key] = lst
    return out


_JSON_CHECK_RE = re.compile(r"^\s*json_valid\s*\(\s*`?([^`()]+?)`?\s*\)\s*$", re.I)


def _read_json_checks(cur: Any, where: str, args: list[str], cat: Catalog, tinfo: _TableInfo,
                      info: dict[str, Any]
                      ) -> tuple[dict[tuple[str, str], set[str]],
                                 dict[tuple[str, str], list[tuple[str, str]]]]:
    """MariaDB JSON columns: LONGTEXT + CHECK (json_valid(`col`)). MySQL has a real JSON type."""
    cols: dict[tuple[str, str], set[str]] = {}
    checks: dict[tuple[str, str], list[tuple[str, str]]] = {}
    if info.get("flavor") != "mariadb":
        return cols, checks
    try:
        rows = _rows(cur, "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE, "
                          "LEVEL FROM information_schema.CHECK_CONSTRAINTS "
                          f"WHERE CONSTRAINT_SCHEMA {where}", args or None)
    except Exception:  # noqa: BLE001 - before MariaDB 10.5.10 there is no LEVEL column
        rows = [r + (None,) for r in _rows(
            cur, "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM "
                 f"information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA {where}", args or None)]
    for schema, table, name, clause, level in rows:
        key = cat.key(schema, table)
        m = _JSON_CHECK_RE.match(str(clause or ""))
        if key not in tinfo or not m:
            continue
        col = m.group(1)
        column_level = level == "Column" if level is not None else name.lower() == col.lower()
        if column_level:
            cols.setdefault(key, set()).add(col.lower())
        else:
            checks.setdefault(key, []).append((name, col))
    return cols, checks


def _table_def(key: tuple[str, str], ttype: str, tcoll: str | None, rows: list[tuple[Any, ...]],
               indexes: list[Index], json_cols: set[str], json_checks: list[tuple[str, str]],
               colls: Collations) -> TableDef:
    tcs = colls.charset_of(tcoll) if tcoll else None
    tcs = tcs or "utf8mb4"
    tcoll = tcoll or colls.default_collation(tcs)
    cols = []
    for name, ctype, nullable, cs, coll, extra, gen in rows:
        try:
            spec = parse_column_type(str(ctype), name)
        except DdlParseError as exc:
            raise SchemaError(f"{key[0]}.{key[1]}.{name}: unknown column type {ctype!r}: {exc}") from None
        spec.charset = cs or spec.charset
        spec.collation = coll or spec.collation
        spec.nullable = str(nullable).upper() == "YES"
        extra_u = str(extra or "").upper()
        gen_u = str(gen or "").upper()
        if gen_u in ("ROW START", "ROW END"):
            spec.generated = "row_start" if gen_u == "ROW START" else "row_end"
        elif "VIRTUAL" in extra_u:
            spec.generated, spec.expression = "virtual", gen
        elif "STORED" in extra_u or "PERSISTENT" in extra_u:
            spec.generated, spec.expression = "stored", gen
        spec.invisible = "INVISIBLE" in extra_u
        spec.auto_increment = "AUTO_INCREMENT" in extra_u
        spec.json_check = name.lower() in json_cols
        cols.append(resolve_column(spec, tcs, tcoll, colls))
    versioned = ttype == "SYSTEM VERSIONED"
    if versioned and not any(c.generated == "row_start" for c in cols):
        cols += implicit_period_columns()
    return TableDef(key[0], key[1], tuple(cols), tuple(indexes), tcs, tcoll, versioned,
                    "sequence" if ttype == "SEQUENCE" else "table", tuple(json_checks))


# -- consistency with the binlog ------------------------------------------------------------------

_USE_RE = re.compile(r"^\s*use\s+`?([^`;]+)`?\s*;\s*", re.I)


def iter_queries(cur: Any, start: BinlogPos, stop: BinlogPos | None = None,
                 limit: int = 200_000) -> Iterable[tuple[BinlogPos, str, str]]:
    """(position, default schema, statement) of QUERY events from `start` (to `stop`).

    Raises SchemaError when more than `limit` events would have to be read.
    """
    files = [str(r[0]) for r in _rows(cur, "SHOW BINARY LOGS")]
    files = [f for f in files if file_seq(f) >= file_seq(start.file)]
    if start.file not in files:
        raise SchemaError(f"binlog {start.file} is no longer on the server")
    seen = 0
    for f in files:
        pos = start.pos if f == start.file else 4
        while True:
            rows = _rows(cur, f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT 1000", (f,))
            if not rows:
                break
            for log, at, etype, _sid, end, info in rows:
                here = BinlogPos(str(log), int(at))
                if stop is not None and here >= stop:
                    return
                seen += 1
                if seen > limit:
                    raise SchemaError(f"more than {limit} events to check after {start}")
                if str(etype) in ("Query", "Query_compressed"):
                    text = str(info or "")
                    schema = ""
                    m = _USE_RE.match(text)
                    if m:
                        schema, text = m.group(1), text[m.end():]
                    yield here, schema, text
                pos = int(end)
            if len(rows) < 1000:
                break


def _touches(text: str, schema: str, names: set[tuple[str, str]] | None) -> bool:
    """Whether a statement may change a table shape (of `names`, when given)."""
    try:
        stmts = parse(text)
    except DdlParseError:
        refs = guess_tables(text)
        return names is None or not refs or any(_ref_in(r, schema, names) for r in refs)
    for st in stmts:
        if isinstance(st, Ignored):
            continue
        if names is None:
            return True
        refs = list(iter_statement_tables(st, schema))
        if not refs or any(_ref_in(r, schema, names) for r in refs):
            return True  # database-level statements count for everything
    return False


def _ref_in(ref: TableRef, schema: str, names: set[tuple[str, str]]) -> bool:
    s, n = (ref.schema or schema).lower(), ref.name.lower()
    return (s, n) in names if s else any(n == t for _, t in names)


def ddl_between(cur: Any, start: BinlogPos, stop: BinlogPos,
                names: set[tuple[str, str]] | None = None) -> bool:
    """Whether a structure-changing statement was logged in [start, stop)."""
    if start == stop:
        return False
    return any(_touches(text, schema, names) for _, schema, text in iter_queries(cur, start, stop))


def changed_since(cur: Any, start: BinlogPos, names: set[tuple[str, str]]) -> bool:
    """Whether any logged statement after `start` may have changed one of `names` (lower-case
    (schema, table)); True when that cannot be determined."""
    try:
        return any(_touches(text, schema, names) for _, schema, text in iter_queries(cur, start))
    except SchemaError:
        return True


# -- entry points ---------------------------------------------------------------------------------

def bootstrap(conn: Any, *, tables: TableFilter = default_filter, lock: bool = False,
              consistent_snapshot: bool = False, retries: int = 5) -> SchemaHistory:
    """Read every tracked table's shape at one binlog position and start a history there.

    lock=True takes FLUSH TABLES WITH READ LOCK for the read (exact, blocks writers briefly);
    otherwise the read is repeated until no DDL was logged while it ran.
    consistent_snapshot=True starts `START TRANSACTION WITH CONSISTENT SNAPSHOT` on `conn`, takes
    the position from MariaDB's binlog_snapshot_file/position and leaves the transaction open,
    so the caller can read table data consistent with the same position.
    """
    cur = conn.cursor()
    info = server_info(cur)
    colls = read_collations(cur)
    for _attempt in range(max(1, retries)):
        if lock:
            cur.execute("FLUSH TABLES WITH READ LOCK")
        try:
            if consistent_snapshot:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                start = _snapshot_position(cur) or binlog_position(cur)
            else:
                start = binlog_position(cur)
            cat = read_catalog(cur, tables=tables, info=info, collations=colls)
            stop = binlog_position(cur)
        finally:
            if lock:
                cur.execute("UNLOCK TABLES")
        if lock or not ddl_between(cur, start, stop):
            gtid = gtid_at(cur, start, info["flavor"])
            return SchemaHistory.from_catalog(cat, start, gtid, server=info)
        if consistent_snapshot:
            cur.execute("ROLLBACK")
    raise SchemaError(f"DDL kept arriving while the schema was read ({retries} attempts); "
                      "retry later or pass lock=True")


def _snapshot_position(cur: Any) -> BinlogPos | None:
    rows = dict(_rows(cur, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
    f, p = rows.get("Binlog_snapshot_file"), rows.get("Binlog_snapshot_position")
    return BinlogPos(str(f), int(p)) if f and p else None


def refetch(conn: Any, keys: Iterable[tuple[str, str]], since: BinlogPos,
            collations: Collations | None = None) -> dict[tuple[str, str], TableDef | None] | None:
    """Current server shapes of `keys`, or None when a later statement may have changed them
    (then the current shape is not the shape at `since`)."""
    keys = list(keys)
    cur = conn.cursor()
    names = {(s.lower(), t.lower()) for s, t in keys}
    if changed_since(cur, since, names):
        return None
    cat = read_catalog(cur, only=keys, tables=lambda s, t: True, collations=collations)
    return {k: cat.tables.get(cat.key(*k)) for k in keys}
