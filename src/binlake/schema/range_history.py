"""A schema history for a stream that starts at a past position with none saved for it.

information_schema shows the tables as they are now. Read together with the DDL logged
between the start and now, it tells every tracked table's shape at the start, or that it
cannot be told:

- a table no statement in the range touches has its shape of now (information_schema);
- a table whose first statement in the range is a plain CREATE TABLE did not exist at the
  start: the replay of that CREATE (and of what follows) gives its shapes;
- a table first renamed away, to a name no other statement touches and that still exists,
  had the shape that table has now (the swap of online schema change tools);
- any other table touched (first by ALTER, RENAME, DROP, CREATE OR REPLACE, CREATE ... IF NOT
  EXISTS, or by a statement the parser cannot read) existed at the start in a shape nothing
  here records: it is *opaque* until a statement defines it anew, and the tracker refuses its
  rows by name rather than guess (SchemaTracker, `SchemaHistory.opaque`).

The QUERY events come from the caller, so any reader of the binlog serves: a replication dump
(binlake.replica.range_schema) or SHOW BINLOG EVENTS (bootstrap.iter_queries). No I/O here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, NamedTuple

from . import ddl
from .history import BinlogPos, SchemaHistory, TableKey
from .model import Catalog

_DDL_WORDS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"})


class LoggedQuery(NamedTuple):
    """One QUERY event of the range: where, its default schema, its text, its sql_mode."""

    pos: BinlogPos
    schema: str
    text: str
    sql_mode: int = 0


@dataclass
class RangeDdl:
    """What the DDL of a range says about the tracked tables' shapes at its start."""

    created: set[TableKey] = field(default_factory=set)
    """First met as the target of a CREATE (or RENAME) that needs it absent: absent at start."""
    opaque: dict[TableKey, str] = field(default_factory=dict)
    """Existed at the start in an unknown shape: why (the first statement and its position)."""
    moved: dict[TableKey, TableKey] = field(default_factory=dict)
    """Tables first met as the old name of a RENAME whose new name no other statement in the
    range touches and still exists: their shape at the start is that table's now (the swap
    of online schema change tools: RENAME TABLE t TO _t_old, _t_new TO t)."""
    redefined: set[TableKey] = field(default_factory=set)
    """Opaque tables that a later CREATE (or RENAME onto the name) in the range defines anew:
    only their rows before it are refused."""
    everything: str | None = None
    """A DDL statement that names no table the parser can find (it may touch any): why."""

    @property
    def touched(self) -> set[TableKey]:
        return self.created | set(self.opaque) | set(self.moved)


def classify(queries: Iterable[LoggedQuery], cat: Catalog,
             tracked: Callable[[str, str], bool]) -> RangeDdl:
    """Sort the tracked tables the range's statements touch by what is known of them at its
    start (`cat`: the catalog of now, for name folding and the tables of a dropped database)."""
    out = RangeDdl()
    seen: set[TableKey] = set()
    count: dict[TableKey, int] = {}
    first_renamed: dict[TableKey, TableKey] = {}

    def touch(key: TableKey, kind: str, why: str, to: TableKey | None = None) -> None:
        """kind: "create" (needs the table absent, defines it), "replace" (defines it),
        "other" (needs it to exist, or leaves its shape unknown); `to`: renamed to."""
        if not tracked(*key):
            return
        count[key] = count.get(key, 0) + 1
        if key not in seen and to is not None:
            first_renamed[key] = to
        if key in seen:
            if kind != "other" and key in out.opaque:
                out.redefined.add(key)
            return
        seen.add(key)
        if kind == "create":
            out.created.add(key)
        else:
            out.opaque[key] = why

    for q in queries:
        where = f"{_clip(q.text)} at {q.pos}"
        try:
            stmts = ddl.parse(q.text, q.sql_mode)  # (non-DDL comes back as Ignored)
        except ddl.DdlParseError:
            refs = ddl.guess_tables(q.text)
            if not refs and _first_word(q.text) in _DDL_WORDS and out.everything is None:
                out.everything = where
            for r in refs:
                touch(cat.key(r.schema or q.schema, r.name), "other", where)
            continue
        for st in stmts:
            _classify_statement(st, q.schema, cat, touch, where)
    for a, b in first_renamed.items():
        if a in out.opaque and count.get(b) == 1 and b in cat.tables:
            out.moved[a] = b
            del out.opaque[a]
            out.redefined.discard(a)
    return out


def _classify_statement(st: ddl.Statement, default: str, cat: Catalog,
                        touch: Callable[..., None], where: str) -> None:
    def key(ref: ddl.TableRef) -> TableKey:
        return cat.key(ref.schema or default, ref.name)

    if isinstance(st, (ddl.Ignored, ddl.TruncateTable)):
        return  # no shape changes
    if isinstance(st, (ddl.CreateTable, ddl.CreateSequence)):
        if not st.temporary:  # a plain CREATE fails, and is not logged, if the table exists
            kind = "other" if st.if_not_exists else "replace" if st.or_replace else "create"
            touch(key(st.table), kind, where)
    elif isinstance(st, ddl.DropTables):
        if not st.temporary:
            for ref in st.tables:
                touch(key(ref), "other", where)
    elif isinstance(st, ddl.RenameTables):
        for a, b in st.pairs:  # a RENAME fails if the new name exists
            touch(key(a), "other", where, to=key(b))
            touch(key(b), "create", where)
    elif isinstance(st, ddl.AlterTable):
        renames = [a[1] for a in st.actions if a[0] == "rename"]
        only_rename = len(renames) == 1 and all(a[0] in ("rename", "noop") for a in st.actions)
        touch(key(st.table), "other", where, to=key(renames[0]) if only_rename else None)
        for action in st.actions:
            if action[0] in ("rename", "partition_to_table"):
                touch(key(action[1]), "create", where)
            elif action[0] == "table_to_partition":
                touch(key(action[1]), "other", where)
    elif isinstance(st, ddl.DatabaseStmt):
        if st.action == "drop" or (st.action == "create" and st.or_replace):
            name = cat.norm(st.name or default)
            for k in list(cat.tables):
                if k[0] == name:
                    touch(k, "other", where)
    else:  # CREATE/DROP INDEX and whatever else names tables
        for ref in ddl.iter_statement_tables(st, default):
            touch(key(ref), "other", where)


def range_history(now: SchemaHistory, found: RangeDdl, start: BinlogPos | None,
                  start_gtid: str | None = None,
                  tracked: Callable[[str, str], bool] | None = None) -> SchemaHistory:
    """The history a stream from `start` needs: `now`'s tables (a fresh bootstrap) that the
    range leaves alone, and those it only renamed away, valid from `start`; the opaque ones
    marked (only those `tracked`: the stream reads no other's rows); those created in the
    range left to the replay of their CREATE."""
    cat = now.head_catalog()
    tables = {k: t for k, t in cat.tables.items() if k not in found.touched}
    for old, new in found.moved.items():
        tables[old] = cat.tables[new].renamed(*old)
    kept = Catalog(databases=dict(cat.databases), tables=tables,
                   server_charset=cat.server_charset, server_collation=cat.server_collation,
                   lower_case_table_names=cat.lower_case_table_names, collations=cat.collations)
    h = SchemaHistory.from_catalog(kept, start, start_gtid, server=now.server)
    h.opaque = dict(found.opaque)
    if found.everything is not None:
        for k in kept.tables:
            h.opaque[k] = found.everything
        h.versions = {}
    if tracked is not None:
        h.opaque = {k: why for k, why in h.opaque.items() if tracked(*k)}
    return h


_COMMENTS = re.compile(r"^(\s+|/\*.*?\*/|--[^\n]*(\n|$)|#[^\n]*(\n|$))*", re.S)


def _first_word(text: str) -> str:
    """The statement's first keyword, past comments (a versioned one's content counts)."""
    rest = _COMMENTS.sub("", ddl.unwrap_versioned_comments(text), count=1)
    words = rest.split(None, 1)
    return words[0].upper() if words else ""


def _clip(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[:n - 3] + "..."
