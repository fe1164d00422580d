"""The DDL statement's text: which old column became which new one, and its DEFAULTs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ...schema import ddl as sqlddl
from ...schema.spec import TableSpec
from .shapes import spec_from_entry
from .steps import DdlStep, Key


def undo_first(spec: TableSpec, steps: list[DdlStep], key: Key) -> TableSpec:
    """`specs` may give the shape after the batch's first DDL of the table (information_schema
    read later): then undo that statement's renames and added columns for the rows before it."""
    first = next((s for s in steps if key in (s.src, s.key)), None)
    if first is None or first.src != key or first.change not in ("alter", "rename"):
        return spec
    new = spec_from_entry(first.entry)
    if new is None or [n.lower() for n in spec.names] != [n.lower() for n in new.names]:
        return spec
    parsed = _alter_actions(first)
    if parsed is None:
        return spec
    names = {c.name.lower(): c.name for c in spec.columns}  # post name -> name before
    gone: set[str] = set()
    for action in reversed(parsed[0]):
        op = action[0]
        if op == "add_columns":
            gone.update(s.name.lower() for s in action[1])
        elif op in ("change", "rename_column"):
            old, new_name = (action[1], action[2].name) if op == "change" else action[1:3]
            for post, cur in names.items():
                if cur.lower() == new_name.lower():
                    names[post] = old
    cols = tuple(replace(c, name=names[c.name.lower()]) for c in spec.columns
                 if c.name.lower() not in gone)
    pk = tuple(names.get(k.lower(), k) for k in spec.primary_key)
    return TableSpec(spec.schema, spec.table, cols, pk)


@dataclass
class Added:
    """A column the statement adds, as written (None: not known from the statement)."""

    name: str
    spec: sqlddl.ColumnSpec | None = None
    default: list[sqlddl.Tok] | None = None
    """The DEFAULT clause's tokens; None when there is none."""


@dataclass
class ColumnDiff:
    renames: dict[str, str] = field(default_factory=dict)
    """Name before -> name after, for columns that keep their values."""
    dropped: list[str] = field(default_factory=list)
    added: dict[str, Added] = field(default_factory=dict)
    """By the new name."""


def analyze(step: DdlStep, old_names: list[str], new: TableSpec) -> ColumnDiff:
    """Which old column became which new one: the statement's ALTER actions replayed on the
    old names (as the schema tracker applied them), else by name."""
    actions = _alter_actions(step) if step.kind == "alter_table" else None
    fresh = [[o.lower(), o, o, None] for o in old_names]  # [orig key, orig name, name, Added]
    cols = [list(e) for e in fresh]
    if actions is not None:
        stmt_actions, defaults = actions

        def find_old(name: str) -> int | None:
            k = name.lower()
            for i, e in enumerate(cols):
                if e[0] == k:
                    return i
            for i, e in enumerate(cols):
                if e[2].lower() == k:
                    return i
            return None

        for action in stmt_actions:
            op = action[0]
            if op == "add_columns":
                for spec in action[1]:
                    if any(e[2].lower() == spec.name.lower() for e in cols):
                        continue  # IF NOT EXISTS
                    cols.append([None, None, spec.name,
                                 Added(spec.name, spec, defaults.get(id(spec)))])
            elif op == "change":
                i = find_old(action[1])
                if i is not None:
                    spec = action[2]
                    cols[i][2] = spec.name
                    if cols[i][0] is None:
                        cols[i][3] = Added(spec.name, spec, defaults.get(id(spec)))
            elif op == "drop_column":
                i = find_old(action[1])
                if i is not None:
                    del cols[i]
            elif op == "rename_column":
                i = find_old(action[1])
                if i is not None:
                    cols[i][2] = action[2]
        if sorted(e[2].lower() for e in cols) != sorted(n.lower() for n in new.names):
            cols = [list(e) for e in fresh]  # the replay disagrees with the tracker: by name
    by_name = {e[2].lower(): e for e in cols}
    diff = ColumnDiff()
    kept = set()
    for n in new.names:
        e = by_name.get(n.lower())
        if e is None:
            diff.added[n] = Added(n)
        elif e[0] is None:
            diff.added[n] = replace(e[3], name=n) if e[3] is not None else Added(n)
        else:
            kept.add(e[0])
            if e[1] != n:
                diff.renames[e[1]] = n
    diff.dropped = [o for o in old_names if o.lower() not in kept]
    return diff


class _Parser(sqlddl._Parser):
    """The DDL parser, also keeping each column's DEFAULT clause (tokens)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.defaults: dict[int, list[sqlddl.Tok]] = {}
        self._column: sqlddl.ColumnSpec | None = None

    def column_attributes(self, spec: sqlddl.ColumnSpec) -> None:
        outer, self._column = self._column, spec
        try:
            super().column_attributes(spec)
        finally:
            self._column = outer

    def skip_expr(self) -> None:
        start = self.i
        super().skip_expr()
        if self._column is not None and start > 0 and self.t[start - 1].up == "DEFAULT":
            self.defaults[id(self._column)] = self.t[start:self.i]


def parse_statement(text: str) -> tuple[list[sqlddl.Statement], dict[int, list[sqlddl.Tok]]] | None:
    """`ddl.parse` with DEFAULT clauses kept; None when the text does not parse (sql_mode is
    not in the record: plain first, then ANSI_QUOTES)."""
    body = sqlddl.unwrap_versioned_comments(text)
    for mode in (0, sqlddl.MODE_ANSI_QUOTES):
        try:
            stmts, defaults = [], {}
            for toks in sqlddl.split_statements(sqlddl.tokenize(body, mode)):
                span = body[toks[0].start:toks[-1].end]
                at = toks[0].start
                rebased = [sqlddl.Tok(t.kind, t.text, t.start - at, t.end - at) for t in toks]
                p = _Parser(rebased, span, mode)
                stmts.append(p.statement())
                defaults.update(p.defaults)
            return stmts, defaults
        except sqlddl.DdlParseError:
            continue
    return None


def _alter_actions(step: DdlStep) -> tuple[list[tuple], dict[int, list[sqlddl.Tok]]] | None:
    parsed = parse_statement(step.statement)
    if parsed is None:
        return None
    stmts, defaults = parsed
    want = (step.src[0].lower(), step.src[1].lower())
    for st in stmts:
        if isinstance(st, sqlddl.AlterTable):
            ref = ((st.table.schema or step.default_schema).lower(), st.table.name.lower())
            if ref == want:
                return st.actions, defaults
    return None
