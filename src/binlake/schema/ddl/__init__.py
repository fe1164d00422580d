"""DDL statements -> changes to the tracked tables.

sqlglot's MySQL tokenizer does the lexing (quotes, escapes, comments); the grammar of the
statements that change table shapes is parsed here, because sqlglot falls back to an opaque
`Command` for much of what real MariaDB/MySQL schemas contain (system versioning, RENAME TABLE,
INVISIBLE, sequences, partition maintenance) and normalizes away details the binlog depends on
(INT vs MEDIUMINT display, CHAR BINARY, TEXT(n)). Every clause is either understood or the
statement is refused with `DdlParseError`: a statement we half-understand must never produce a
plausible but wrong table shape.

`parse()` turns text into statement objects; `apply()` applies one statement to a `Catalog`
copy and reports which tables changed.
"""
from __future__ import annotations

from .lexer import (
    MODE_REAL_AS_FLOAT, MODE_ANSI_QUOTES, MODE_ORACLE, MODE_MAXDB, MODE_NO_BACKSLASH_ESCAPES,
    DdlParseError, Tok, unwrap_versioned_comments, tokenize, split_statements,
)
from .statements import (
    TableRef, ColumnSpec, IndexSpec, Statement, Ignored, CreateTable, AlterTable, DropTables,
    RenameTables, TruncateTable, CreateIndex, DropIndex, CreateSequence, DatabaseStmt,
    iter_statement_tables,
)
from .parser import (
    Parser, parse, guess_tables, parse_column_type,
)
from .context import (
    TableChange, ApplyContext, UnknownTableError,
)
from .resolve import (
    resolve_column, implicit_period_columns,
)
from .apply import (
    apply,
)

__all__ = [
    "MODE_REAL_AS_FLOAT", "MODE_ANSI_QUOTES", "MODE_ORACLE", "MODE_MAXDB",
    "MODE_NO_BACKSLASH_ESCAPES", "DdlParseError", "Tok", "unwrap_versioned_comments", "tokenize",
    "split_statements",
    "TableRef", "ColumnSpec", "IndexSpec", "Statement", "Ignored", "CreateTable", "AlterTable",
    "DropTables", "RenameTables", "TruncateTable", "CreateIndex", "DropIndex", "CreateSequence",
    "DatabaseStmt", "iter_statement_tables",
    "Parser", "parse", "guess_tables", "parse_column_type",
    "TableChange", "ApplyContext", "UnknownTableError",
    "resolve_column", "implicit_period_columns",
    "apply",
]

_Parser = Parser
"""The old name of Parser (spark/evolve subclasses it); goes once nothing uses it."""
