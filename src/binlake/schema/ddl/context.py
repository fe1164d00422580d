"""What applying a statement needs and returns: ApplyContext, TableChange, table lookup."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import SchemaError
from ..model import Catalog, TableDef
from .lexer import clip_text
from .statements import Statement, TableRef


# -- applying statements to a catalog ---------------------------------------------------------

@dataclass(frozen=True)
class TableChange:
    """One table's change from one statement (what the tracker records and reports)."""

    kind: str
    """create | alter | drop | rename | truncate | refetch | drift"""
    key: tuple[str, str]
    """(schema, table) after the change (the dropped name for drops)."""
    table: TableDef | None
    """The new shape (None when dropped)."""
    old_key: tuple[str, str] | None = None
    """For renames (and ALTER ... RENAME): the name before."""

    @property
    def schema(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]


@dataclass
class ApplyContext:
    default_schema: str
    tracked: Callable[[str, str], bool]
    """Whether a table is in scope; out-of-scope tables may be unknown without error."""
    server_charset: str | None = None


class UnknownTableError(SchemaError):
    """DDL refers to a tracked table the model does not have."""


def table_key(ref: TableRef, cat: Catalog, ctx: ApplyContext) -> tuple[str, str]:
    return cat.key(ref.schema or ctx.default_schema, ref.name)


def require_table(cat: Catalog, key: tuple[str, str], ctx: ApplyContext, stmt: Statement) -> TableDef | None:
    """The tracked table, None for an untracked unknown one; error for a tracked unknown one."""
    t = cat.tables.get(key)
    if t is None and ctx.tracked(*key):
        raise UnknownTableError(f"table {key[0]}.{key[1]} is not in the schema history "
                                f"(statement: {clip_text(stmt.text)})")
    return t
