"""ALTER TABLE semantics: `TableEdit` and the ALTER statement handler."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, NoReturn

from ...errors import SchemaError
from ..model import BLOB_CAPACITY, CHARACTER_TYPES, Catalog, Column, Index, TEXT_TYPES, TableDef
from .statements import AlterTable, ColumnSpec, IndexSpec
from .context import ApplyContext, TableChange, UnknownTableError, table_key
from .resolve import implicit_period_columns, resolve_column


class TableEdit:
    """ALTER TABLE semantics on a working copy of one table.

    CHANGE/MODIFY/DROP/RENAME name columns by their *old* names and AFTER by the new layout, and
    one statement may swap two names; so while a statement runs every column has an identity
    (an int), and keys refer to identities until `result()` turns them back into names.
    """

    def __init__(self, t: TableDef, cat: Catalog, ctx: ApplyContext) -> None:
        self.t = t
        self.cat = cat
        self.ctx = ctx
        self._next = 0
        self.cols: list[tuple[str | None, int, Column]] = []  # (original key, identity, column)
        for c in t.columns:
            self.cols.append((c.key, self._new_id(), c))
        ids = {c.key: i for _, i, c in self.cols}
        # keys: (name, kind, [(identity or None, prefix)])
        self.indexes: list[tuple[str, str, list[tuple[int | None, int | None]]]] = [
            (ix.name, ix.kind, [(ids.get(c.lower()) if c else None, p) for c, p in
                                zip(ix.columns, ix.prefixes or (None,) * len(ix.columns))])
            for ix in t.indexes]
        self.json_checks = [(n, ids[c.lower()]) for n, c in t.json_checks if c.lower() in ids]
        self.charset = t.charset or cat.database_defaults(t.schema)[0]
        self.collation = t.collation or cat.collations.default_collation(self.charset)
        self.versioned = t.system_versioned
        self.rename_to: tuple[str, str] | None = None

    def _new_id(self) -> int:
        self._next += 1
        return self._next

    def _fail(self, msg: str) -> NoReturn:
        raise SchemaError(f"{self.t.qualified_name}: {msg}")

    def _find_old(self, name: str) -> int | None:
        """Position of the column that had `name` before this statement (else by new name)."""
        k = name.lower()
        for i, (orig, _, _) in enumerate(self.cols):
            if orig == k:
                return i
        return self._find_new(name)

    def _find_new(self, name: str) -> int | None:
        k = name.lower()
        for i, (_, _, c) in enumerate(self.cols):
            if c.key == k:
                return i
        return None

    def _insert_at(self, entry: tuple[str | None, int, Column],
                   pos: tuple[str, str | None] | None) -> None:
        if pos is None:
            i = len(self.cols)
            while i > 0 and self.cols[i - 1][2].implicit:
                i -= 1  # new columns go before MariaDB's implicit row_start/row_end
        elif pos[0] == "first":
            i = 0
        else:
            j = self._find_new(pos[1] or "")
            if j is None:
                self._fail(f"AFTER unknown column {pos[1]}")
            i = j + 1
        self.cols.insert(i, entry)

    def _pk_ids(self) -> set[int]:
        return {cid for _, kind, parts in self.indexes if kind == "primary"
                for cid, _ in parts if cid is not None}

    def _resolve(self, spec: ColumnSpec, cid: int) -> Column:
        col = resolve_column(spec, self.charset, self.collation, self.cat.collations)
        if spec.inline_key:
            self._add_key(spec.inline_key, "PRIMARY" if spec.inline_key == "primary" else None,
                          [(cid, None)], False, col.name)
        if spec.inline_key == "primary" or cid in self._pk_ids():
            col = replace(col, nullable=False)
        return col

    def add_columns(self, specs: list[ColumnSpec], pos: tuple[str, str | None] | None,
                    if_not_exists: bool) -> None:
        for spec in specs:
            if self._find_new(spec.name) is not None:
                if if_not_exists:
                    continue
                self._fail(f"duplicate column {spec.name}")
            cid = self._new_id()
            self._insert_at((None, cid, self._resolve(spec, cid)), pos)
            if pos is not None and pos[0] == "after":
                pos = ("after", spec.name)

    def change(self, old: str, spec: ColumnSpec, pos: tuple[str, str | None] | None,
               if_exists: bool) -> None:
        i = self._find_old(old)
        if i is None:
            if if_exists:
                return
            self._fail(f"unknown column {old}")
        orig, cid, prev = self.cols[i]
        col = self._resolve(spec, cid)
        if prev.implicit and col.generated == prev.generated:
            col = replace(col, implicit=True, invisible=True)
        if pos is None:
            self.cols[i] = (orig, cid, col)
        else:
            del self.cols[i]
            self._insert_at((orig, cid, col), pos)

    def drop_column(self, name: str, if_exists: bool) -> None:
        i = self._find_old(name)
        if i is None:
            if if_exists:
                return
            self._fail(f"unknown column {name}")
        _, cid, _ = self.cols.pop(i)
        kept = []
        for name_, kind, parts in self.indexes:
            parts = [p for p in parts if p[0] != cid]
            if parts:  # a key loses the dropped column; a key left empty disappears
                kept.append((name_, kind, parts))
        self.indexes = kept
        self.json_checks = [(n, c) for n, c in self.json_checks if c != cid]

    def rename_column(self, old: str, new: str) -> None:
        i = self._find_old(old)
        if i is None:
            self._fail(f"unknown column {old}")
        orig, cid, col = self.cols[i]
        self.cols[i] = (orig, cid, replace(col, name=new))

    def set_visibility(self, name: str, invisible: bool) -> None:
        i = self._find_old(name)
        if i is None:
            self._fail(f"unknown column {name}")
        orig, cid, col = self.cols[i]
        self.cols[i] = (orig, cid, replace(col, invisible=invisible))

    def add_index(self, spec: IndexSpec) -> None:
        parts: list[tuple[int | None, int | None]] = []
        for c, p in zip(spec.columns, spec.prefixes):
            if c is None:
                parts.append((None, p))
                continue
            i = self._find_new(c)
            if i is None:
                self._fail(f"key column {c} does not exist")
            parts.append((self.cols[i][1], p))
        first = next((c for c in spec.columns if c is not None), None)
        self._add_key(spec.kind, spec.name, parts, spec.if_not_exists, first)

    def _add_key(self, kind: str, name: str | None, parts: list[tuple[int | None, int | None]],
                 if_not_exists: bool, first: str | None) -> None:
        if kind == "primary":
            if any(k == "primary" for _, k, _ in self.indexes):
                self._fail("multiple primary keys")
            name = "PRIMARY"
            ids = {cid for cid, _ in parts}
            self.cols = [(o, i, replace(c, nullable=False) if i in ids else c) for o, i, c in self.cols]
        taken = {n.lower() for n, _, _ in self.indexes}
        if name is not None and kind != "primary" and name.lower() in taken:
            if if_not_exists:
                return
            self._fail(f"duplicate key name {name}")
        if name is None:  # the server names an unnamed key after its first column: c, c_2, ...
            base = first or "functional_index"
            name, n = base, 2
            while name.lower() in taken:
                name, n = f"{base}_{n}", n + 1
        self.indexes.append((name, kind, parts))

    def drop_index(self, name: str, if_exists: bool) -> None:
        k = name.lower()
        for i, (n, _, _) in enumerate(self.indexes):
            if n.lower() == k:
                del self.indexes[i]
                return
        if not if_exists:
            self._fail(f"unknown key {name}")

    def rename_index(self, old: str, new: str) -> None:
        for i, (n, kind, parts) in enumerate(self.indexes):
            if n.lower() == old.lower():
                self.indexes[i] = (new, kind, parts)
                return
        self._fail(f"unknown key {old}")

    def add_json_check(self, name: str, column: str) -> None:
        i = self._find_new(column)
        if i is None:
            return
        if not name:  # the server names an unnamed CHECK CONSTRAINT_<n>, the first n free
            taken = {n.upper() for n, _ in self.json_checks}
            n = 1
            while f"CONSTRAINT_{n}" in taken:
                n += 1
            name = f"CONSTRAINT_{n}"
        self.json_checks.append((name, self.cols[i][1]))

    def drop_constraint(self, name: str) -> None:
        k = name.lower()
        before = len(self.json_checks)
        self.json_checks = [(n, c) for n, c in self.json_checks if n.lower() != k]
        if len(self.json_checks) == before:
            i = self._find_new(name)  # a column-level CHECK is named after its column
            if i is not None and self.cols[i][2].is_json:
                o, cid, c = self.cols[i]
                self.cols[i] = (o, cid, replace(c, is_json=False))

    def convert(self, charset: str, collation: str | None) -> None:
        """CONVERT TO CHARACTER SET: every text column changes charset; TEXT types grow to fit."""
        colls = self.cat.collations
        cs = colls.canonical_charset(charset)
        coll = colls.canonical_collation(collation) if collation else colls.default_collation(cs)
        self.charset, self.collation = cs, coll
        new_width = colls.width(cs)
        out = []
        for orig, cid, c in self.cols:
            if c.type in CHARACTER_TYPES and c.charset != "binary":
                t = c.type
                if t in TEXT_TYPES:
                    chars = BLOB_CAPACITY[TEXT_TYPES[t]] // colls.width(c.charset)
                    need = chars * new_width
                    size = next(n for n, cap in sorted(BLOB_CAPACITY.items()) if need <= cap or n == 4)
                    t = {v: k for k, v in TEXT_TYPES.items()}[max(size, TEXT_TYPES[t])]
                c = replace(c, type=t, charset=cs, collation=coll)
            out.append((orig, cid, c))
        self.cols = out

    def default_charset(self, charset: str | None, collation: str | None) -> None:
        colls = self.cat.collations
        cs = colls.canonical_charset(charset) if charset else colls.charset_of(collation or "")
        self.charset = cs or self.charset
        self.collation = (colls.canonical_collation(collation) if collation
                          else colls.default_collation(self.charset))

    def add_versioning(self) -> None:
        self.versioned = True
        if not any(c.generated == "row_start" for _, _, c in self.cols):
            self.cols += [(None, self._new_id(), c) for c in implicit_period_columns()]

    def drop_versioning(self) -> None:
        self.versioned = False
        dropped = {cid for _, cid, c in self.cols if c.implicit}
        self.cols = [(o, i, replace(c, generated=None) if c.generated in ("row_start", "row_end") else c)
                     for o, i, c in self.cols if i not in dropped]
        self.indexes = [(n, k, [p for p in parts if p[0] not in dropped]) for n, k, parts in self.indexes]

    def result(self) -> TableDef:
        cols = tuple(c for _, _, c in self.cols)
        if not cols:
            self._fail("a table must have at least one column")
        seen: set[str] = set()
        for c in cols:  # checked at the end: one statement may swap two names
            if c.key in seen:
                self._fail(f"duplicate column {c.name}")
            seen.add(c.key)
        names = {cid: c.name for _, cid, c in self.cols}
        indexes = [Index(n, k, tuple(names.get(cid) if cid is not None else None for cid, _ in parts),
                         tuple(p for _, p in parts)) for n, k, parts in self.indexes]
        indexes.sort(key=lambda i: 0 if i.kind == "primary" else 1)
        schema, name = self.rename_to or (self.t.schema, self.t.name)
        return TableDef(schema, name, cols, tuple(indexes), self.charset, self.collation,
                        self.versioned, self.t.kind,
                        tuple((n, names[cid]) for n, cid in self.json_checks if cid in names))


_ALTER_OPS: dict[str, Callable[..., None]] = {
    "add_columns": TableEdit.add_columns,
    "change": TableEdit.change,
    "drop_column": TableEdit.drop_column,
    "rename_column": TableEdit.rename_column,
    "set_visibility": TableEdit.set_visibility,
    "add_index": TableEdit.add_index,
    "drop_index": TableEdit.drop_index,
    "rename_index": TableEdit.rename_index,
    "add_json_check": TableEdit.add_json_check,
    "convert": TableEdit.convert,
    "default_charset": TableEdit.default_charset,
    "add_versioning": TableEdit.add_versioning,
    "drop_versioning": TableEdit.drop_versioning,
}


def apply_alter(st: AlterTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = table_key(st.table, cat, ctx)
    t = cat.tables.get(key)
    if t is None:
        if st.if_exists or not ctx.tracked(*key):
            # an untracked table may still be renamed into the tracked scope
            for action in st.actions:
                if action[0] == "rename" and ctx.tracked(*table_key(action[1], cat, ctx)):
                    raise UnknownTableError(f"ALTER TABLE {st.table} RENAME into a tracked name; "
                                            "the source is not in the schema history")
            return []
        raise UnknownTableError(f"ALTER TABLE {st.table}: table not in the schema history")
    edit = TableEdit(t, cat, ctx)
    extra: list[TableChange] = []
    for action in st.actions:
        op, args = action[0], action[1:]
        if op in ("noop", "add_period", "drop_period"):
            continue
        if op == "drop_constraint":
            edit.drop_constraint(args[0])
        elif op == "rename":
            edit.rename_to = table_key(args[0], cat, ctx)
        elif op == "partition_to_table":  # MariaDB 10.7: the partition becomes a table
            nk = table_key(args[0], cat, ctx)
            extra.append(TableChange("create", nk, t.renamed(*nk)))
        elif op == "table_to_partition":  # ... and a table becomes a partition
            ok = table_key(args[0], cat, ctx)
            if ok in cat.tables:
                extra.append(TableChange("drop", ok, None))
        elif op in _ALTER_OPS:
            _ALTER_OPS[op](edit, *args)
        else:  # pragma: no cover - parser and applier disagree
            raise SchemaError(f"unhandled ALTER action {op}")
    new = edit.result()
    new_key = cat.key(new.schema, new.name)
    for ch in extra:
        if ch.table is None:
            cat.tables.pop(ch.key, None)
        else:
            cat.tables[ch.key] = ch.table
    if new_key != key:
        del cat.tables[key]
        cat.tables[new_key] = new
        return [TableChange("rename", new_key, new, old_key=key)] + extra
    cat.tables[key] = new
    return [TableChange("alter", key, new)] + extra
