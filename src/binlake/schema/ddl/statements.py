"""The parsed-statement and column/index spec dataclasses the parser produces."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, TypeAlias, Unpack


# -- statements -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TableRef:
    schema: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclass
class ColumnSpec:
    """A column definition as written, before table defaults (charset) are known."""

    name: str
    type: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    unsigned: bool = False
    zerofill: bool = False
    charset: str | None = None
    collation: str | None = None
    binary_attr: bool = False
    values: tuple[str, ...] | None = None
    nullable: bool | None = None
    generated: str | None = None
    expression: str | None = None
    invisible: bool = False
    auto_increment: bool = False
    inline_key: str | None = None  # primary | unique
    json_check: bool = False
    text_bytes: int | None = None  # TEXT(n)/BLOB(n): pick the size class once the charset is known


@dataclass
class IndexSpec:
    kind: str
    name: str | None
    columns: list[str | None]
    prefixes: list[int | None]
    if_not_exists: bool = False


@dataclass
class Statement:
    text: str


@dataclass
class Ignored(Statement):
    """Touches no table shape (GRANT, FLUSH, views, routines, DML, ...)."""

    what: str = ""


@dataclass
class CreateTable(Statement):
    table: TableRef
    columns: list[ColumnSpec] = field(default_factory=list)
    indexes: list[IndexSpec] = field(default_factory=list)
    json_checks: list[tuple[str, str]] = field(default_factory=list)
    charset: str | None = None
    collation: str | None = None
    like: TableRef | None = None
    select: bool = False
    if_not_exists: bool = False
    or_replace: bool = False
    temporary: bool = False
    system_versioning: bool = False
    period: tuple[str, str] | None = None
    sequence: bool = False
    unnamed_checks: int = 0


AlterAction: TypeAlias = tuple[str, Unpack[tuple[Any, ...]]]
"""One ALTER TABLE clause: (op, *args). `op` names a `TableEdit` method (whose arguments the
args are) or one of the few ops `apply_alter` handles itself (noop, rename, partition moves)."""


@dataclass
class AlterTable(Statement):
    table: TableRef
    actions: list[AlterAction] = field(default_factory=list)
    if_exists: bool = False


@dataclass
class DropTables(Statement):
    tables: list[TableRef]
    if_exists: bool = False
    temporary: bool = False
    sequence: bool = False


@dataclass
class RenameTables(Statement):
    pairs: list[tuple[TableRef, TableRef]]
    if_exists: bool = False


@dataclass
class TruncateTable(Statement):
    table: TableRef


@dataclass
class CreateIndex(Statement):
    table: TableRef
    index: IndexSpec
    or_replace: bool = False


@dataclass
class DropIndex(Statement):
    table: TableRef
    name: str
    if_exists: bool = False


@dataclass
class CreateSequence(Statement):
    table: TableRef
    value_type: ColumnSpec | None = None
    if_not_exists: bool = False
    or_replace: bool = False
    temporary: bool = False


@dataclass
class DatabaseStmt(Statement):
    action: str  # create | alter | drop
    name: str | None
    charset: str | None = None
    collation: str | None = None
    if_exists: bool = False
    if_not_exists: bool = False
    or_replace: bool = False


def iter_statement_tables(stmt: Statement, default_schema: str) -> Iterator[TableRef]:
    """Every table a parsed statement names (used to decide whether an error matters)."""
    for attr in ("table", "like"):
        ref = getattr(stmt, attr, None)
        if isinstance(ref, TableRef):
            yield ref
    for ref in getattr(stmt, "tables", []) or []:
        yield ref
    for a, b in getattr(stmt, "pairs", []) or []:
        yield a
        yield b
