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

# every name the single-module ddl.py had, private ones included (spark/evolve subclasses _Parser)
from .lexer import (  # noqa: F401
    MODE_REAL_AS_FLOAT, MODE_ANSI_QUOTES, MODE_ORACLE, MODE_MAXDB, MODE_NO_BACKSLASH_ESCAPES,
    DdlParseError, _clip, Tok, _WORD_RE, unwrap_versioned_comments, tokenize, split_statements,
)
from .statements import (  # noqa: F401
    TableRef, ColumnSpec, IndexSpec, Statement, Ignored, CreateTable, AlterTable, DropTables,
    RenameTables, TruncateTable, CreateIndex, DropIndex, CreateSequence, DatabaseStmt,
    iter_statement_tables,
)
from .parser import (  # noqa: F401
    _IGNORED_FIRST, _IGNORED_OBJECTS, _COLUMN_END, _BINARY_OPS, _TABLE_OPTIONS, _PARTITION_OPS,
    _Parser, _label, _JSON_VALID_RE, _json_valid_column, _COMPOUND_RE, parse, _TABLE_AFTER_RE,
    guess_tables, parse_column_type,
)
from .context import (  # noqa: F401
    TableChange, ApplyContext, UnknownTableError, _key, _require,
)
from .resolve import (  # noqa: F401
    _table_defaults, resolve_column, _index_from_spec, _not_null_key_columns,
    implicit_period_columns,
)
from .edit import (  # noqa: F401
    _TableEdit, _ALTER_OPS, _apply_alter,
)
from .apply import (  # noqa: F401
    apply, _apply_create, _apply_sequence, _apply_drop, _apply_rename, _apply_truncate,
    _apply_database, _apply_create_index, _apply_drop_index, _HANDLERS,
)
