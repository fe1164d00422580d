"""SchemaTracker: the decoder's TableResolver, backed by the schema history.

For every TABLE_MAP the tracker looks up the table's shape *at that binlog position*, checks it
against what the TABLE_MAP says (column count, type bytes, type metadata; names, signedness,
charsets, labels and key when the server sent FULL metadata) and fills in what the event lacks.
For every QUERY event it applies structure-changing DDL at the event's position. Whenever the
model and the binlog disagree, or a DDL cannot be applied with certainty, it stops with an error
that names the table and the position rather than decode rows under the wrong names.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..binlog.columns.charsets import charset_of as charset_of_id
from ..binlog.constants import ColumnType as T
from ..binlog.events import Event, GtidEvent, MariaGtidEvent, QueryEvent
from ..binlog.table_map import NUMERIC_TYPES as BINLOG_NUMERIC, ColumnInfo, TableMapEvent
from ..errors import SchemaDriftError, SchemaError
from .._util.recent import make_room
from . import ddl
from .bootstrap import TableFilter, bootstrap, default_filter, refetch
from .ddl import ApplyContext, DdlParseError, TableChange
from .history import BinlogPos, DdlRecord, SchemaHistory
from .model import (
    BINARY_COLLATION_ID, BLOB_TYPES, Catalog, Column, FIXED_BINARY_TYPES, GEOMETRY_TYPES,
    INTEGER_TYPES, NUMERIC_TYPES, TEXT_TYPES, TableDef, binlog_shapes, column_collation_id,
)

_RESOLVED_CACHE = 4096
"""Resolved maps kept (`_resolved`, `_by_parse`); full, the older half goes. Fewer than the
decoder's TABLE_CACHE: an entry may hold the head catalog of its time, and a catalog
is remade at every DDL."""

ON_DRIFT = ("error", "rebootstrap", "trust_binlog")

# MariaDB two-phase ALTER (binlog_alter_two_phase): Q_GTID_FLAGS3 bits of the QUERY event
FL_START_ALTER = 2
FL_COMMIT_ALTER = 4
FL_ROLLBACK_ALTER = 8

_NOT_DDL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|XA\s|SAVEPOINT|RELEASE\s|INSERT|UPDATE|DELETE|"
                      r"SET\s|LOAD\s|CALL\s|DO\s)", re.I)
_DDL_WORDS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"})


def maybe_ddl(text: str) -> bool:
    """Whether a QUERY event's text may change a table shape (not BEGIN, DML, XA, SET ...)."""
    return not _NOT_DDL.match(text)


class ShapeUnknownError(SchemaError):
    """Rows of a table whose shape at the stream's start nothing here records."""


class RefusedRows:
    """The `row_decoders` of a TABLE_MAP whose rows must not be decoded: every decoder asked
    for raises the error `refusal` makes (only the column names may be kept). Not a dict, so
    the C scanner leaves such rows to the Python path, which asks."""

    def __init__(self, refusal: Callable[[], SchemaError]) -> None:
        self._refusal = refusal
        self._names: dict[Any, Any] = {}

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "column-names":
            return self._names.get(key, default)
        raise self._refusal()

    def __getitem__(self, key: Any) -> Any:
        if key == "column-names":
            return self._names[key]
        raise self._refusal()

    def __setitem__(self, key: Any, value: Any) -> None:
        if key != "column-names":
            raise self._refusal()
        self._names[key] = value


class DdlApplyError(SchemaError):
    """A DDL statement that may change tracked tables could not be applied with certainty."""

    def __init__(self, reason: str, *, statement: str, file: str | None, pos: int) -> None:
        self.reason = reason
        self.statement = statement
        self.file = file
        self.pos = pos
        super().__init__(f"{file}:{pos}: cannot apply DDL: {reason}",
                         hint="bootstrap the schema again from the server at this position, "
                              "or give the tracker a server connection (connect=...) so it can "
                              "re-read the table")


@dataclass(frozen=True)
class DdlChange:
    """What one QUERY event did to the tracked schema (for `op: "ddl"` change records)."""

    statement: str
    schema: str
    """The event's default schema."""
    kind: str
    """create_table | alter_table | drop_table | rename_table | truncate_table | create_index |
    drop_index | create_sequence | drop_sequence | create_database | alter_database |
    drop_database | refetch (re-read from the server) | drift (taken from the binlog)"""
    changes: tuple[TableChange, ...]
    """Per table: what happened and its new shape (`TableChange.table`, None when dropped)."""
    file: str | None
    pos: int
    end_pos: int
    gtid: str | None = None
    databases: tuple[str, ...] = ()

    @property
    def tables(self) -> tuple[tuple[str, str], ...]:
        """Every (schema, table) the statement touched: new names, and old names of renames."""
        out: list[tuple[str, str]] = []
        for c in self.changes:
            for key in ((c.old_key, c.key) if c.old_key else (c.key,)):
                if key not in out:
                    out.append(key)
        return tuple(out)

    @property
    def table_names(self) -> list[str]:
        return [f"{s}.{t}" for s, t in self.tables]

    def shape(self, schema: str, table: str) -> TableDef | None:
        """The new shape of one table after this statement (None: dropped or not touched)."""
        for c in self.changes:
            if c.key == (schema, table):
                return c.table
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "schema": self.schema, "statement": self.statement,
            "tables": [_change_json(c) for c in self.changes],
            **({"databases": list(self.databases)} if self.databases else {}),
            "position": {"file": self.file, "pos": self.pos, "end_pos": self.end_pos},
            "gtid": self.gtid,
        }


def _change_json(c: TableChange) -> dict[str, Any]:
    """One table's change; each column is name, SQL type and nullability, plus only when they
    apply: `charset` (text types; "binary" makes the values bytes), `json` (MariaDB JSON,
    stored as LONGTEXT), `generated`, `auto_increment`, `invisible` -- what a consumer
    needs to type the column's values exactly and to know how existing rows were filled."""
    d: dict[str, Any] = {"change": c.kind, "schema": c.schema, "table": c.name}
    if c.old_key:
        d["old_schema"], d["old_table"] = c.old_key
    if c.table is not None:
        cols = []
        for col in c.table.columns:
            cj: dict[str, Any] = {"name": col.name, "type": col.sql_type(),
                                  "nullable": col.nullable}
            if col.charset:
                cj["charset"] = col.charset
            if col.is_json:
                cj["json"] = True
            if col.generated:
                cj["generated"] = col.generated
            if col.auto_increment:
                cj["auto_increment"] = True
            if col.invisible:
                cj["invisible"] = True
            cols.append(cj)
        d["columns"] = cols
        pk = c.table.primary_key
        if pk:
            d["primary_key"] = list(pk)
    return d


_STATEMENT_KINDS = {
    ddl.CreateTable: "create_table", ddl.AlterTable: "alter_table", ddl.DropTables: "drop_table",
    ddl.RenameTables: "rename_table", ddl.TruncateTable: "truncate_table",
    ddl.CreateIndex: "create_index", ddl.DropIndex: "drop_index",
    ddl.CreateSequence: "create_sequence",
}


def _statement_kind(st: ddl.Statement) -> str:
    if isinstance(st, ddl.DatabaseStmt):
        return f"{st.action}_database"
    if isinstance(st, ddl.DropTables) and st.sequence:
        return "drop_sequence"
    return _STATEMENT_KINDS.get(type(st), "other")


class SchemaTracker:
    """Column names, types and keys for every TABLE_MAP, across DDL (see module docstring).

    history: where to start (from `bootstrap`, `SchemaHistory.load`, or empty for DDL-only
    mode, where every tracked table must be created inside the binlogs read).
    connect: optional factory of PyMySQL connections; lets the tracker re-read a table from
    information_schema when a DDL cannot be parsed or on_drift="rebootstrap", but only when the
    server's binlog shows that nothing changed the table since.
    on_drift: what a TABLE_MAP that contradicts the model does: "error" (SchemaDriftError),
    "rebootstrap" (re-read the table when safe, else error), "trust_binlog" (use the TABLE_MAP's
    own FULL metadata and record it; with MINIMAL metadata columns stay unnamed).
    tables: which (schema, table) are tracked; others pass through untouched.
    """

    def __init__(self, history: SchemaHistory | None = None, *,
                 connect: Callable[[], Any] | None = None, on_drift: str = "error",
                 tables: TableFilter = default_filter) -> None:
        if on_drift not in ON_DRIFT:
            raise ValueError(f"on_drift must be one of {ON_DRIFT}, not {on_drift!r}")
        self.history = history if history is not None else SchemaHistory()
        self.connect = connect
        self.on_drift = on_drift
        self.tables = tables
        self.gtid: str | None = None
        self.dirty = False
        """True when the history changed since it was last saved or loaded."""
        self._last: tuple[tuple[str | None, int], DdlChange | None] | None = None
        self._resolved: dict[tuple[int, str, str, _Signature],
                             tuple[TableDef, TableMapEvent]] = {}
        """(model identity, names, TABLE_MAP signature) -> the model and the first map filled
        from it: servers repeat the same TABLE_MAP for every transaction, and models are
        immutable. Later maps share its columns and its compiled row decoders (a fresh
        decoder cache for every transaction cost a compile and the slow path each)."""
        self._by_parse: dict[int, tuple[list[ColumnInfo], TableDef,
                                        tuple[str, str, tuple[int, ...] | None], TableMapEvent,
                                        Catalog | None]] = {}
        """id(columns of a parsed TABLE_MAP) -> (those columns, the model, the map's names and
        key, the filled map, the head catalog the model came from or None): the decoder hands
        out the same bytes' map as copies sharing one parse, so a repeat is found without its
        signature."""

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_server(cls, connect: Callable[[], Any], *, tables: TableFilter = default_filter,
                    lock: bool = False, **kw: Any) -> "SchemaTracker":
        """Bootstrap from information_schema at the server's current binlog position."""
        conn = connect()
        try:
            history = bootstrap(conn, tables=tables, lock=lock)
        finally:
            conn.close()
        return cls(history, connect=connect, tables=tables, **kw)

    @classmethod
    def load(cls, path: str | Path, **kw: Any) -> "SchemaTracker":
        return cls(SchemaHistory.load(path), **kw)

    def save(self, path: str | Path) -> None:
        self.history.save(path)
        self.dirty = False

    @property
    def start(self) -> BinlogPos | None:
        """Where reading should begin for this history (the bootstrap position)."""
        return self.history.start

    # -- TableResolver ----------------------------------------------------------------------
    def resolve(self, tm: TableMapEvent) -> TableMapEvent:
        """Fill names, signedness, charsets, labels, JSON flags, UUID/INET types and key into
        a TABLE_MAP."""
        history = self.history
        if history.opaque:
            okey = history.head_catalog().key(tm.schema, tm.table)
            if okey in history.opaque and self.tables(*okey):
                return self._opaque(tm, okey)
        cat = history.head_catalog()
        parse = tm.columns
        quick = self._by_parse.get(id(parse))
        if (quick is not None and quick[0] is parse and quick[4] is cat
                and quick[2] == (tm.schema, tm.table, tm.primary_key)
                and history.at_or_after_head(tm.file, tm.offset)):
            # A repeat of a parse filled from this same head state (the catalog is remade at
            # every change, and is immutable): the same table, so the same answer, without
            # the name, filter and position work below (a map per transaction, live).
            first = quick[3]
            return tm.with_columns(first.columns, first.primary_key, first.row_decoders)
        key = cat.key(tm.schema, tm.table)
        if not self.tables(*key):
            return tm
        at_head = history.at_or_after_head(tm.file, tm.offset)
        if at_head:
            table = cat.tables.get(key)
        else:
            table = history.table_at(key, BinlogPos(tm.file, tm.offset))
        if table is None:
            return self._drift(tm, key, None, ["the table is not in the schema history"])
        names = (tm.schema, tm.table, tm.primary_key)
        if quick is not None and quick[0] is parse and quick[1] is table and quick[2] == names:
            first = quick[3]
            out = tm.with_columns(first.columns, first.primary_key, first.row_decoders)
        else:
            sig = (id(table), tm.schema, tm.table, _signature(tm))
            hit = self._resolved.get(sig)
            if hit is not None and hit[0] is table:
                first = hit[1]
                out = tm.with_columns(first.columns, first.primary_key, first.row_decoders)
            else:
                problems = compare(table, tm, history.collations)
                if problems:
                    return self._drift(tm, key, table, problems)
                out = first = fill(tm, table, history.collations)
                make_room(self._resolved, _RESOLVED_CACHE)
                self._resolved[sig] = (table, first)
        make_room(self._by_parse, _RESOLVED_CACHE)
        # the head catalog is kept only when `table` came from it: then a repeat at head
        # may take the first branch above
        self._by_parse[id(parse)] = (parse, table, names, first, cat if at_head else None)
        return out

    def _opaque(self, tm: TableMapEvent, key: tuple[str, str]) -> TableMapEvent:
        """A table in `history.opaque`: its own TABLE_MAP when that names every column (FULL
        metadata), else a map whose rows are refused when decoded, naming the table and what
        would make its shape known. (At the rows, not here: the server writes a TABLE_MAP for
        every table a statement may write, a trigger's too, rows or none.)"""
        if all(c.name is not None for c in tm.columns):
            return tm
        why = self.history.opaque[key]
        h = self.history
        start = h.start or (f"GTID {h.start_gtid}" if h.start_gtid else None)

        def refusal() -> ShapeUnknownError:
            return ShapeUnknownError(
                f"{tm.qualified_name}, rows after its TABLE_MAP at {tm.file}:{tm.offset}: the "
                f"shape this table had at the stream's start{f' ({start})' if start else ''} "
                f"is unknown: it existed before the start and DDL read since changed it "
                f"(first: {why}); the binlog does not name its columns "
                "(binlog_row_metadata is not FULL)",
                hint="resume from a checkpoint whose schema history was kept "
                     "(CHECKPOINT.schema.json), or set binlog_row_metadata=FULL on the primary "
                     "before such rows are written, or leave the table out with --tables")

        return tm.with_columns(tm.columns, tm.primary_key, RefusedRows(refusal))  # type: ignore[arg-type]

    def _drift(self, tm: TableMapEvent, key: tuple[str, str], table: TableDef | None,
               problems: list[str]) -> TableMapEvent:
        pos = BinlogPos(tm.file, tm.offset)
        at_head = self.history.head is None or tm.file is None or pos >= self.history.head
        if self.on_drift == "trust_binlog":
            derived = table_from_binlog(tm)
            if derived is not None and at_head:
                self._put(key, derived, pos)
            return tm
        if self.on_drift == "rebootstrap" and self.connect is not None and at_head:
            fresh = self._refetch([key], pos)
            if fresh is not None and fresh.get(key) is not None:
                t = fresh[key]
                assert t is not None
                if not compare(t, tm, self.history.collations):
                    self._put(key, t, pos)
                    return fill(tm, t, self.history.collations)
        raise SchemaDriftError(
            f"{tm.qualified_name} at {tm.file}:{tm.offset}: the TABLE_MAP does not match the "
            f"schema history: {'; '.join(problems)}. History: "
            f"{table.describe() if table else '(no such table)'}; binlog: {binlog_describe(tm)}",
            hint="the table changed outside the binlog (sql_log_bin=0?) or the history is from "
                 "another server; bootstrap again, or choose on_drift='rebootstrap'/'trust_binlog'")

    def _put(self, key: tuple[str, str], table: TableDef | None, pos: BinlogPos) -> None:
        """A version from the binlog or the server (not from DDL), valid from `pos`."""
        self.history.put(key, table, pos)
        self.dirty = True

    # -- DDL ---------------------------------------------------------------------------------
    def observe(self, ev: Event) -> None:
        """Optional: call for every event so DDL records carry their GTID."""
        if isinstance(ev, (GtidEvent, MariaGtidEvent)):
            self.gtid = ev.gtid

    def on_query(self, ev: QueryEvent) -> DdlChange | None:
        """Apply the DDL of one QUERY event at its position; None if no tracked table changed.

        Idempotent per event position: a second call (or a replay after a restart that the
        history already covers) returns the recorded change without applying it again.
        """
        text = ev.query
        if _NOT_DDL.match(text):
            return None
        ident = (ev.file, ev.offset)
        if self._last is not None and self._last[0] == ident:
            return self._last[1]
        result = self._on_query(ev)
        self._last = (ident, result)
        return result

    def _on_query(self, ev: QueryEvent) -> DdlChange | None:
        flags3 = int(ev.status_vars.get("gtid_flags3") or 0)
        if flags3 & (FL_START_ALTER | FL_ROLLBACK_ALTER):
            return None  # the shape changes at COMMIT ALTER, which repeats the statement
        rec = self.history.find_record(ev.file, ev.offset)
        if rec is not None:
            return self._from_record(rec)
        text = ev.query
        sql_mode = int(ev.status_vars.get("sql_mode") or 0)
        try:
            stmts = ddl.parse(text, sql_mode)
        except DdlParseError as exc:
            return self._cannot_apply(ev, exc, ddl.guess_tables(text), text)
        if all(isinstance(s, ddl.Ignored) for s in stmts):
            return None
        head_cat = self.history.head_catalog()
        cat = head_cat.copy()
        defined = self._follow_opaque(stmts, ev.schema, head_cat) if self.history.opaque else []
        server_coll = (ev.status_vars.get("charset") or {}).get("server")
        server_cs = None
        if server_coll:
            server_cs = charset_of_id(int(server_coll))
            name = self.history.collations.name_of(int(server_coll))
            if server_cs:
                cat.server_charset, cat.server_collation = server_cs, name
        ctx = ApplyContext(ev.schema, self._tracked_key, server_cs)
        changes: list[TableChange] = []
        try:
            for st in stmts:
                changes += ddl.apply(st, cat, ctx)
        except SchemaError as exc:
            refs = [r for st in stmts for r in ddl.iter_statement_tables(st, ev.schema)]
            return self._cannot_apply(ev, exc, refs, text)
        for key in defined:  # dropped or renamed away: no longer of unknown shape
            self.history.opaque.pop(key, None)
        changes = [c for c in changes if self._tracked_key(*c.key)
                   or (c.old_key is not None and self._tracked_key(*c.old_key))]
        db_stmts = [s for s in stmts if isinstance(s, ddl.DatabaseStmt)]
        db_changed = cat.databases != head_cat.databases
        if not changes and not db_changed and not (db_stmts and self._tracked_db(ev, db_stmts)):
            return None
        end = BinlogPos(ev.file, ev.end)
        if self.history.head is not None and ev.file is not None and end < self.history.head:
            raise DdlApplyError(f"changes {', '.join(f'{k[0]}.{k[1]}' for k in _keys(changes))} "
                                f"but the schema history already extends to {self.history.head} "
                                "without this statement", statement=text, file=ev.file, pos=ev.offset)
        kind = _statement_kind(next(s for s in stmts if not isinstance(s, ddl.Ignored)))
        dbs = tuple(sorted({cat.norm(s.name or ev.schema) for s in db_stmts}))
        return self._record(ev, kind, changes, dbs, cat)

    def _tracked_key(self, schema: str, table: str) -> bool:
        """Tracked and of known shape (DDL on an opaque table changes nothing we know)."""
        return self.tables(schema, table) and (schema, table) not in self.history.opaque

    def _follow_opaque(self, stmts: list[ddl.Statement], default: str,
                       cat: Catalog) -> list[tuple[str, str]]:
        """Carry `history.opaque` through one event's statements, before they are applied: a
        CREATE defines its table (it leaves the set), a copy or a new name of an opaque
        table joins it. Returns the tables to take out after the apply (dropped, renamed
        away): until then they must stay untracked, so that the apply ignores them."""
        op = self.history.opaque
        before = dict(op)
        gone: list[tuple[str, str]] = []

        def key(ref: ddl.TableRef) -> tuple[str, str]:
            return cat.key(ref.schema or default, ref.name)

        for st in stmts:
            if isinstance(st, (ddl.CreateTable, ddl.CreateSequence)) and not st.temporary:
                k = key(st.table)
                like = getattr(st, "like", None)
                if like is not None and key(like) in op:
                    op[k] = op[key(like)]  # a copy of an unknown shape
                elif k in op and not st.if_not_exists:
                    del op[k]
            elif isinstance(st, ddl.DropTables) and not st.temporary:
                gone += [key(r) for r in st.tables if key(r) in op]
            elif isinstance(st, ddl.RenameTables):
                for a, b in st.pairs:
                    if key(a) in op:
                        op[key(b)] = op[key(a)]
                        gone.append(key(a))
            elif isinstance(st, ddl.AlterTable) and key(st.table) in op:
                k = key(st.table)
                for action in st.actions:
                    if action[0] in ("rename", "partition_to_table"):
                        op[key(action[1])] = op[k]
                        if action[0] == "rename":
                            gone.append(k)
            elif isinstance(st, ddl.DatabaseStmt) and (
                    st.action == "drop" or (st.action == "create" and st.or_replace)):
                name = cat.norm(st.name or default)
                gone += [k for k in op if k[0] == name]
        if op != before or gone:
            self.dirty = True
        return gone

    def _tracked_db(self, ev: QueryEvent, stmts: list[ddl.DatabaseStmt]) -> bool:
        return any(self.tables(s.name or ev.schema, "") for s in stmts)

    def _record(self, ev: QueryEvent, kind: str, changes: list[TableChange],
                dbs: tuple[str, ...], cat: Any | None) -> DdlChange:
        versions: dict[tuple[str, str], TableDef | None] = {}
        for c in changes:
            if c.old_key is not None and c.old_key != c.key:
                versions[c.old_key] = None
            versions[c.key] = c.table
        rec = DdlRecord(ev.file, ev.offset, ev.end, ev.query, ev.schema, kind, self.gtid,
                        [(c.kind, c.key, c.old_key) for c in changes], list(dbs))
        self.history.record(rec, versions, cat.databases if cat is not None else None)
        self.dirty = True
        return DdlChange(ev.query, ev.schema, kind, tuple(changes), ev.file, ev.offset, ev.end,
                         self.gtid, dbs)

    def _from_record(self, rec: DdlRecord) -> DdlChange:
        end = BinlogPos(rec.file, rec.end)
        changes = tuple(TableChange(kind, key, self.history.table_at(key, end), old)
                        for kind, key, old in rec.changes)
        return DdlChange(rec.statement, rec.schema, rec.kind, changes, rec.file, rec.pos, rec.end,
                         rec.gtid, tuple(rec.databases))

    def _cannot_apply(self, ev: QueryEvent, exc: Exception, refs: list[ddl.TableRef],
                      text: str) -> DdlChange | None:
        cat = self.history.head_catalog()
        keys = sorted({cat.key(r.schema or ev.schema, r.name) for r in refs})
        tracked = [k for k in keys if self._tracked_key(*k) or k in cat.tables]
        first = text.lstrip().split(None, 1)[0].upper() if text.strip() else ""
        if not tracked and (refs or first not in _DDL_WORDS):
            return None  # touches no tracked table (or is no DDL at all)
        end = BinlogPos(ev.file, ev.end)
        at_head = self.history.head is None or ev.file is None or end >= self.history.head
        if self.connect is not None and tracked and at_head:
            fresh = self._refetch(tracked, end)
            if fresh is not None:
                changes = []
                for k in tracked:
                    t = fresh.get(k)
                    if t is None and k not in cat.tables:
                        continue
                    changes.append(TableChange("refetch" if t is not None else "drop", k, t))
                return self._record(ev, "refetch", changes, (), None)
        raise DdlApplyError(str(exc), statement=text, file=ev.file, pos=ev.offset) from None

    def _refetch(self, keys: list[tuple[str, str]], since: BinlogPos
                 ) -> dict[tuple[str, str], TableDef | None] | None:
        assert self.connect is not None
        try:
            conn = self.connect()
        except Exception:  # noqa: BLE001 - no server: fall back to the error path
            return None
        try:
            return refetch(conn, keys, since, self.history.collations)
        finally:
            conn.close()


def _keys(changes: list[TableChange]) -> list[tuple[str, str]]:
    return [c.key for c in changes]


# -- TABLE_MAP vs model ---------------------------------------------------------------------------

_SIG_FIELDS = operator.attrgetter(
    "binlog_type", "meta", "nullable", "name", "unsigned", "collation", "enum_values",
    "set_values", "geometry_type", "visible", "vector_dimensions", "is_json", "plugin_type")


_Signature = tuple[tuple[tuple[Any, ...], ...], tuple[int, ...] | None, tuple[int, ...] | None]
"""What of a TABLE_MAP a filled model depends on: per-column fields, key, key prefixes."""


def _signature(tm: TableMapEvent) -> _Signature:
    return (tuple(map(_SIG_FIELDS, tm.columns)), tm.primary_key, tm.primary_key_prefixes)


def binlog_describe(tm: TableMapEvent) -> str:
    return "(" + ", ".join(
        f"{c.name or '@' + str(c.index + 1)} {c.type_name}/{c.meta}" for c in tm.columns) + ")"


def compare(table: TableDef, tm: TableMapEvent, collations: Any) -> list[str]:
    """Every disagreement between the model and a TABLE_MAP (empty list: they agree)."""
    problems: list[str] = []
    signs_ok = _signedness_reliable(tm)
    if len(table.columns) != len(tm.columns):
        return [f"{len(tm.columns)} columns in the binlog, {len(table.columns)} in the history"]
    for mc, c in zip(table.columns, tm.columns):
        label = f"column {c.index + 1} ({mc.name})"
        shapes = binlog_shapes(mc, collations)
        if (c.binlog_type, c.meta) not in shapes:
            problems.append(f"{label}: binlog {T(c.binlog_type).name}/{c.meta}, history "
                            f"{mc.sql_type()}" + (f" {mc.charset}" if mc.charset else ""))
            continue
        if c.name is not None and c.name.lower() != mc.key:
            problems.append(f"{label}: named {c.name!r} in the binlog")
        if signs_ok and c.unsigned is not None and mc.type in NUMERIC_TYPES \
                and c.unsigned != mc.unsigned:
            problems.append(f"{label}: {'un' if c.unsigned else ''}signed in the binlog")
        if c.collation is not None:
            expected = column_collation_id(mc, collations)
            if expected is not None and _charset(c.collation) != _charset(expected):
                problems.append(f"{label}: charset {_charset(c.collation)} in the binlog, "
                                f"{_charset(expected)} in the history")
        labels = c.enum_values if c.enum_values is not None else c.set_values
        if labels is not None and mc.values is not None and tuple(labels) != tuple(mc.values):
            problems.append(f"{label}: labels {list(labels)} in the binlog, {list(mc.values)} "
                            "in the history")
    if tm.primary_key is not None and not problems:
        model_pk = table.key_indexes()
        if table.primary_key is not None and tuple(tm.primary_key) != tuple(model_pk or ()):
            problems.append(f"primary key {list(tm.primary_key)} in the binlog, "
                            f"{list(model_pk or ())} in the history")
    return problems


def _signedness_reliable(tm: TableMapEvent) -> bool:
    """MariaDB counts YEAR columns in the signedness bitmap, the decoder does not (yet): with a
    YEAR column the decoded flags are shifted, so the model's signedness is used instead."""
    return not any(c.type == T.YEAR for c in tm.columns)


def _charset(cid: int) -> str | None:
    cs = charset_of_id(cid)
    return "utf8mb3" if cs == "utf8" else cs


def fill(tm: TableMapEvent, table: TableDef, collations: Any) -> TableMapEvent:
    """The TABLE_MAP with every field it lacks taken from the model (its own fields win)."""
    cols = []
    signs_ok = _signedness_reliable(tm)
    json_cols = table.json_columns()
    for mc, c in zip(table.columns, tm.columns):
        numeric = c.type in BINLOG_NUMERIC
        labels = mc.values if mc.values is not None else None
        json = c.binlog_type == T.BLOB and mc.key in json_cols
        cols.append(ColumnInfo(
            index=c.index, type=c.type, binlog_type=c.binlog_type, meta=c.meta,
            nullable=c.nullable,
            name=c.name if c.name is not None else mc.name,
            unsigned=(c.unsigned if c.unsigned is not None and signs_ok
                      else (mc.unsigned if numeric else None)),
            collation=c.collation if c.collation is not None else column_collation_id(mc, collations),
            enum_values=c.enum_values if c.enum_values is not None else (
                labels if c.type == T.ENUM else None),
            set_values=c.set_values if c.set_values is not None else (
                labels if c.type == T.SET else None),
            geometry_type=c.geometry_type if c.geometry_type is not None else (
                GEOMETRY_TYPES.get(mc.type) if c.type == T.GEOMETRY else None),
            visible=c.visible if c.visible is not None else not mc.invisible,
            vector_dimensions=c.vector_dimensions if c.vector_dimensions is not None else (
                mc.length if mc.type == "vector" else None),
            is_json=c.is_json or json,
            plugin_type=(mc.type if c.binlog_type == T.STRING and mc.type in FIXED_BINARY_TYPES
                         else c.plugin_type),
        ))
    pk = tm.primary_key if tm.primary_key is not None else table.key_indexes()
    return tm.with_columns(cols, pk)


# -- a model from a TABLE_MAP (on_drift="trust_binlog") ---------------------------------------

_INT_NAMES: dict[int, str] = {v: k for k, v in INTEGER_TYPES.items()}
_GEOM_NAMES = {v: k for k, v in GEOMETRY_TYPES.items()}
_TEXT_BY_SIZE = {v: k for k, v in TEXT_TYPES.items()}
_BLOB_BY_SIZE = {v: k for k, v in BLOB_TYPES.items()}


def table_from_binlog(tm: TableMapEvent) -> TableDef | None:
    """A model built from FULL TABLE_MAP metadata; None when the event carries no names."""
    if any(c.name is None for c in tm.columns):
        return None
    cols = [_column_from_binlog(c) for c in tm.columns]
    from .model import Index

    indexes: tuple[Index, ...] = ()
    if tm.primary_key:
        indexes = (Index("PRIMARY", "primary", tuple(cols[i].name for i in tm.primary_key),
                         tuple(tm.primary_key_prefixes or (None,) * len(tm.primary_key))),)
    return TableDef(tm.schema, tm.table, tuple(cols), indexes)


def _column_from_binlog(c: ColumnInfo) -> Column:
    cs = _charset(c.collation) if c.collation is not None else None
    binary = c.collation == BINARY_COLLATION_ID
    base: dict[str, Any] = dict(name=c.name or f"@{c.index + 1}", nullable=c.nullable,
                                unsigned=bool(c.unsigned), invisible=c.visible is False)
    t = c.type
    if t in _INT_NAMES:
        return Column(type=_INT_NAMES[t], **base)
    simple: dict[int, str] = {T.FLOAT: "float", T.DOUBLE: "double", T.YEAR: "year", T.DATE: "date",
              T.NEWDATE: "date", T.JSON: "json"}
    if t in simple:
        return Column(type=simple[t], **base)
    if t == T.NEWDECIMAL:
        return Column(type="decimal", precision=c.precision, scale=c.scale, **base)
    if t == T.BIT:
        return Column(type="bit", length=(c.meta >> 8) * 8 + (c.meta & 0xFF), **base)
    if t in (T.TIME2, T.TIME, T.DATETIME2, T.DATETIME, T.TIMESTAMP2, T.TIMESTAMP):
        name = {T.TIME2: "time", T.TIME: "time", T.DATETIME2: "datetime", T.DATETIME: "datetime",
                T.TIMESTAMP2: "timestamp", T.TIMESTAMP: "timestamp"}[T(t)]
        return Column(type=name, fsp=c.fsp or None, **base)
    if t in (T.ENUM, T.SET):
        return Column(type="enum" if t == T.ENUM else "set", charset=cs,
                      values=c.enum_values if t == T.ENUM else c.set_values, **base)
    if t == T.GEOMETRY:
        return Column(type=_GEOM_NAMES.get(c.geometry_type or 0, "geometry"), **base)
    width = 1 if binary or cs is None else {"utf8mb4": 4, "utf8mb3": 3, "ucs2": 2, "utf16": 4,
                                           "utf32": 4, "utf16le": 4}.get(cs, 1)
    if t == T.STRING:
        b0, b1 = c.meta >> 8, c.meta & 0xFF
        nbytes = b1 | ((((b0 & 0x30) ^ 0x30) << 4) if (b0 & 0x30) != 0x30 else 0)
        return Column(type="binary" if binary else "char", length=nbytes // width,
                      charset=None if binary else cs, **base)
    if t in (T.VARCHAR, T.VAR_STRING):
        return Column(type="varbinary" if binary else "varchar", length=c.meta // width,
                      charset=None if binary else cs, **base)
    if t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        size = c.meta or 2
        if binary or cs is None:
            return Column(type=_BLOB_BY_SIZE.get(size, "blob"), **base)
        return Column(type=_TEXT_BY_SIZE.get(size, "text"), charset=cs, is_json=c.is_json, **base)
    if t == T.VECTOR:
        return Column(type="vector", length=c.vector_dimensions, **base)
    return Column(type=c.type_name.lower(), **base)
