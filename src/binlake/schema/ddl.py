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

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from ..errors import SchemaError
from .model import (
    BLOB_CAPACITY, BLOB_TYPES, CHARACTER_TYPES, Catalog, Collations, Column, DatabaseDef,
    FIXED_BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, Index, TEXT_TYPES, TableDef,
)

# sql_mode bits that change how DDL text reads (same values in MySQL and MariaDB)
MODE_REAL_AS_FLOAT = 1 << 0
MODE_ANSI_QUOTES = 1 << 2
MODE_ORACLE = 1 << 9
MODE_MAXDB = 1 << 12
MODE_NO_BACKSLASH_ESCAPES = 1 << 20


class DdlParseError(SchemaError):
    """A statement that may change a table shape but is not understood."""

    def __init__(self, message: str, statement: str = "", offset: int | None = None) -> None:
        self.statement = statement
        self.offset = offset
        where = f" at character {offset}" if offset is not None else ""
        super().__init__(f"{message}{where} in: {_clip(statement)}")


def _clip(s: str, n: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n] + "..."


# -- lexing -----------------------------------------------------------------------------------

class _Tokenizer(MySQL.Tokenizer):
    # sqlglot swallows the rest of a statement after "command" keywords (RENAME, SHOW, ...)
    # into one string; binlake parses those statements itself.
    COMMANDS: set = set()


class _AnsiTokenizer(_Tokenizer):
    QUOTES = ["'"]
    IDENTIFIERS = ["`", '"']


class _AnsiNoEscTokenizer(_Tokenizer):
    QUOTES = ["'"]
    IDENTIFIERS = ["`", '"']
    STRING_ESCAPES = ["'"]


class _NoEscTokenizer(_Tokenizer):
    STRING_ESCAPES = ["'", '"']


@dataclass(slots=True)
class Tok:
    kind: str  # word | qid | str | num | hex | bit | op
    text: str
    start: int
    end: int  # exclusive

    @property
    def up(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


_WORD_RE = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]+")
_STRING_TYPES = {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.RAW_STRING,
                 TokenType.BYTE_STRING}


def unwrap_versioned_comments(sql: str) -> str:
    """`/*!50100 X */` and `/*M!100100 X */` are executed by the server: keep X, drop the marker.

    Quoted text is left alone. The version is not compared: MySQL dumps restored into MariaDB
    run `/*!80016 ... */` too, because MariaDB's version number is larger.
    """
    if "/*" not in sql:
        return sql
    out: list[str] = []
    i, n = 0, len(sql)
    in_exec = False
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = i + 1
            while j < n:
                if sql[j] == "\\" and ch != "`":
                    j += 2
                    continue
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i:j + 1])
            i = j + 1
            continue
        if in_exec and sql.startswith("*/", i):
            in_exec = False
            out.append(" ")
            i += 2
            continue
        if sql.startswith("/*!", i) or sql.startswith("/*M!", i):
            j = i + (3 if sql[i + 2] == "!" else 4)
            k = j
            while k < n and k - j < 6 and sql[k].isdigit():
                k += 1
            out.append(" ")
            in_exec = True
            i = k
            continue
        if sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(sql[i:j])
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def tokenize(sql: str, sql_mode: int = 0) -> list[Tok]:
    ansi = bool(sql_mode & MODE_ANSI_QUOTES)
    noesc = bool(sql_mode & MODE_NO_BACKSLASH_ESCAPES)
    cls = (_AnsiNoEscTokenizer if ansi and noesc else _AnsiTokenizer if ansi
           else _NoEscTokenizer if noesc else _Tokenizer)
    try:
        raw = cls().tokenize(sql)
    except TokenError as exc:
        raise DdlParseError(f"cannot tokenize: {exc}", sql) from None
    toks: list[Tok] = []
    for t in raw:
        tt = t.token_type
        start, end = t.start, t.end + 1
        if tt == TokenType.IDENTIFIER:
            toks.append(Tok("qid", t.text, start, end))
        elif tt in _STRING_TYPES:
            toks.append(Tok("str", t.text, start, end))
        elif tt == TokenType.HEX_STRING:
            toks.append(Tok("hex", t.text, start, end))
        elif tt == TokenType.BIT_STRING:
            toks.append(Tok("bit", t.text, start, end))
        elif tt == TokenType.NUMBER:
            toks.append(Tok("num", t.text, start, end))
        elif _WORD_RE.fullmatch(t.text.replace(" ", "")) and any(c.isalpha() or c == "_" for c in t.text):
            # multi-word keywords (ORDER BY, PRIMARY KEY, CHARACTER SET) become single words
            for m in re.finditer(r"\S+", sql[start:end]):
                toks.append(Tok("word", m.group(), start + m.start(), start + m.end()))
        else:
            toks.append(Tok("op", t.text, start, end))
    # MySQL identifiers may start with digits (`1st_table` unquoted): glue number+word
    merged: list[Tok] = []
    for tok in toks:
        prev = merged[-1] if merged else None
        if (prev is not None and tok.kind == "word" and prev.kind in ("num", "word")
                and prev.end == tok.start and prev.text[-1:].isalnum()):
            merged[-1] = Tok("word", prev.text + tok.text, prev.start, tok.end)
        else:
            merged.append(tok)
    return merged


def split_statements(toks: list[Tok]) -> list[list[Tok]]:
    """Top-level `;` separate statements (compound bodies are never split: see `parse`)."""
    out: list[list[Tok]] = [[]]
    for t in toks:
        if t.kind == "op" and t.text == ";":
            out.append([])
        else:
            out[-1].append(t)
    return [s for s in out if s]


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


@dataclass
class AlterTable(Statement):
    table: TableRef
    actions: list[tuple] = field(default_factory=list)
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


# -- the parser -------------------------------------------------------------------------------

_IGNORED_FIRST = frozenset("""
    BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE XA START SET INSERT UPDATE DELETE REPLACE LOAD CALL
    DO SELECT WITH VALUES TABLE LOCK UNLOCK GRANT REVOKE FLUSH ANALYZE OPTIMIZE REPAIR CHECK
    CHECKSUM INSTALL UNINSTALL RESET PURGE KILL SHOW USE HANDLER HELP EXPLAIN DESCRIBE DESC
    PREPARE EXECUTE DEALLOCATE SIGNAL RESIGNAL GET SHUTDOWN CACHE BACKUP CHANGE STOP BINLOG
    IMPORT CLONE RESTART
""".split())
_IGNORED_OBJECTS = frozenset("""
    VIEW TRIGGER PROCEDURE FUNCTION EVENT USER ROLE SERVER TABLESPACE LOGFILE PACKAGE INSTANCE
    SPATIAL_REFERENCE RESOURCE SYNONYM UNDO
""".split())
_COLUMN_END = frozenset({",", ")"})
_BINARY_OPS = frozenset({"+", "-", "*", "/", "%", "||", "&", "|", "^", "<<", ">>"})
_TABLE_OPTIONS = frozenset("""
    ENGINE TYPE AUTO_INCREMENT AVG_ROW_LENGTH CHECKSUM TABLE_CHECKSUM COMMENT COMPRESSION
    CONNECTION DELAY_KEY_WRITE ENCRYPTION ENCRYPTED ENCRYPTION_KEY_ID INSERT_METHOD KEY_BLOCK_SIZE
    MAX_ROWS MIN_ROWS PACK_KEYS PAGE_CHECKSUM PAGE_COMPRESSED PAGE_COMPRESSION_LEVEL PASSWORD
    ROW_FORMAT SEQUENCE STATS_AUTO_RECALC STATS_PERSISTENT STATS_SAMPLE_PAGES TABLESPACE
    TRANSACTIONAL UNION IETF_QUOTES SECONDARY_ENGINE SECONDARY_ENGINE_ATTRIBUTE ENGINE_ATTRIBUTE
    AUTOEXTEND_SIZE STORAGE
""".split())
_PARTITION_OPS = frozenset("""
    COALESCE REORGANIZE EXCHANGE ANALYZE CHECK OPTIMIZE REBUILD REPAIR TRUNCATE DISCARD IMPORT
    REMOVE UPGRADE
""".split())


class _Parser:
    def __init__(self, toks: list[Tok], text: str, sql_mode: int) -> None:
        self.t = toks
        self.i = 0
        self.text = text
        self.mode = sql_mode

    # -- cursor helpers --------------------------------------------------------------------
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def eof(self) -> bool:
        return self.i >= len(self.t)

    def at(self, *words: str) -> bool:
        for k, w in enumerate(words):
            tok = self.peek(k)
            if tok is None or tok.up != w:
                return False
        return True

    def at_any(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.up in words

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def at_op(self, op: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.kind == "op" and tok.text == op

    def accept_op(self, op: str) -> bool:
        if self.at_op(op):
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            self.fail(f"expected '{op}'")

    def fail(self, msg: str) -> None:
        tok = self.peek()
        got = f", found {tok.text!r}" if tok is not None else ", found end of statement"
        raise DdlParseError(msg + got, self.text, tok.start if tok is not None else None)

    def next(self) -> Tok:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end")
        self.i += 1
        return tok  # type: ignore[return-value]

    def word(self) -> str:
        tok = self.next()
        if tok.kind != "word":
            self.i -= 1
            self.fail("expected a keyword")
        return tok.up

    def ident(self) -> str:
        tok = self.next()
        if tok.kind in ("word", "qid"):
            return tok.text
        self.i -= 1
        self.fail("expected a name")
        return ""

    def string(self) -> str:
        tok = self.next()
        if tok.kind != "str":
            self.i -= 1
            self.fail("expected a string")
        return tok.text

    def number(self) -> int:
        tok = self.next()
        if tok.kind != "num" or not tok.text.isdigit():
            self.i -= 1
            self.fail("expected a number")
        return int(tok.text)

    def name_value(self) -> str:
        """A charset/collation/engine name: word, quoted name or string."""
        tok = self.next()
        if tok.kind in ("word", "qid", "str"):
            return tok.text
        self.i -= 1
        self.fail("expected a name")
        return ""

    def qname(self) -> TableRef:
        a = self.ident()
        if self.at_op(".") and self.peek(1) is not None and self.peek(1).kind in ("word", "qid"):
            self.i += 1
            return TableRef(a, self.ident())
        return TableRef(None, a)

    def skip_group(self) -> tuple[int, int]:
        """Skip a balanced ( ... ); returns the character span inside the parentheses."""
        self.expect_op("(")
        start = self.t[self.i - 1].end
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == "op":
                depth += tok.text == "("
                depth -= tok.text == ")"
        return start, self.t[self.i - 1].start

    def group_text(self) -> str:
        a, b = self.skip_group()
        return self.text[a:b].strip()

    def skip_until(self, stop_ops: frozenset[str] = _COLUMN_END,
                   stop_words: frozenset[str] = frozenset()) -> None:
        """Skip tokens (balanced groups included) up to a top-level stop token."""
        while not self.eof():
            tok = self.peek()
            assert tok is not None
            if tok.kind == "op" and tok.text in stop_ops:
                return
            if tok.up in stop_words:
                return
            if tok.kind == "op" and tok.text == "(":
                self.skip_group()
            else:
                self.i += 1

    def skip_expr(self) -> None:
        """One value expression as DEFAULT / ON UPDATE take it: literals, calls, (expr), a+b."""
        while True:
            while self.at_op("-") or self.at_op("+") or self.at_op("~") or self.at_op("!"):
                self.i += 1
            tok = self.next()
            if tok.kind == "op" and tok.text == "(":
                self.i -= 1
                self.skip_group()
            elif tok.kind == "str":
                while self.peek() is not None and self.peek().kind == "str":
                    self.i += 1
            elif tok.kind == "word":
                while self.at_op(".") and self.peek(1) is not None and self.peek(1).kind in ("word", "qid"):
                    self.i += 2
                if self.at_op("("):
                    self.skip_group()
                elif self.peek() is not None and self.peek().kind == "str" and tok.text.startswith("_"):
                    self.i += 1  # _utf8mb4'text'
            elif tok.kind not in ("num", "hex", "bit", "qid"):
                self.i -= 1
                self.fail("expected a value")
            nxt = self.peek()
            if nxt is not None and (nxt.kind == "op" and nxt.text in _BINARY_OPS
                                    or nxt.up in ("DIV", "MOD")):
                self.i += 1
                continue
            return

    def accept_eq(self) -> None:
        self.accept_op("=")

    # -- statements ------------------------------------------------------------------------
    def statement(self) -> Statement:
        first = self.peek()
        if first is None:
            return Ignored(self.text, "empty")
        w = first.up
        if w in _IGNORED_FIRST:
            return Ignored(self.text, w)
        self.i += 1
        if w == "CREATE":
            return self.create()
        if w == "ALTER":
            return self.alter()
        if w == "DROP":
            return self.drop()
        if w == "RENAME":
            return self.rename()
        if w == "TRUNCATE":
            self.accept("TABLE")
            ref = self.qname()
            self._wait()
            self.end()
            return TruncateTable(self.text, ref)
        if first.kind == "op" and first.text == "(":
            return Ignored(self.text, "select")
        self.i -= 1
        self.fail("unknown statement")
        raise AssertionError

    def end(self) -> None:
        if not self.eof():
            self.fail("unexpected text")

    def _wait(self) -> None:
        if self.accept("WAIT"):
            self.number()
        else:
            self.accept("NOWAIT")

    def _skip_definer_and_modifiers(self) -> None:
        """ALGORITHM=..., DEFINER=user, SQL SECURITY x, AGGREGATE: before views/routines."""
        while True:
            if self.accept("ALGORITHM"):
                self.accept_eq()
                self.next()
            elif self.accept("DEFINER"):
                self.accept_eq()
                self.next()
                if self.accept_op("@"):
                    self.next()
                elif self.at_op("("):
                    self.skip_group()
            elif self.accept("SQL", "SECURITY"):
                self.next()
            elif self.at_any("AGGREGATE", "ONLINE", "OFFLINE", "NONSEMANTIC"):
                self.i += 1
            else:
                return

    def create(self) -> Statement:
        or_replace = self.accept("OR", "REPLACE")
        self._skip_definer_and_modifiers()
        temporary = self.accept("TEMPORARY")
        if self.accept("TABLE"):
            return self.create_table(or_replace, temporary)
        if self.at_any("UNIQUE", "FULLTEXT", "SPATIAL", "INDEX", "KEY"):
            return self.create_index(or_replace)
        if self.at_any("DATABASE", "SCHEMA"):
            self.i += 1
            return self.database("create", or_replace)
        if self.accept("SEQUENCE"):
            return self.create_sequence(or_replace, temporary)
        return self._ignored_object()

    def _ignored_object(self) -> Statement:
        tok = self.peek()
        if tok is not None and (tok.up in _IGNORED_OBJECTS or tok.up in ("SPATIAL", "DEFINER")):
            return Ignored(self.text, tok.up)
        if self.at("LOGFILE", "GROUP") or self.at("RESOURCE", "GROUP"):
            return Ignored(self.text, tok.up if tok else "")
        self.fail("unknown object type")
        raise AssertionError

    def _if_not_exists(self) -> bool:
        return self.accept("IF", "NOT", "EXISTS")

    def _if_exists(self) -> bool:
        return self.accept("IF", "EXISTS")

    # CREATE TABLE -----------------------------------------------------------------------------
    def create_table(self, or_replace: bool, temporary: bool) -> Statement:
        st = CreateTable(self.text, TableRef(None, ""), or_replace=or_replace, temporary=temporary)
        st.if_not_exists = self._if_not_exists()
        st.table = self.qname()
        if self.accept("LIKE"):
            st.like = self.qname()
            self.end()
            return st
        if self.at_op("(") and self.peek(1) is not None and self.peek(1).up == "LIKE":
            self.i += 2
            st.like = self.qname()
            self.expect_op(")")
            self.end()
            return st
        if self.at_op("(") and not self._select_follows(1):
            self.i += 1
            while True:
                self.create_definition(st)
                if self.accept_op(","):
                    continue
                self.expect_op(")")
                break
        self.table_options(st)
        return st

    def _select_follows(self, k: int) -> bool:
        tok = self.peek(k)
        if tok is None:
            return False
        if tok.kind == "op" and tok.text == "(":
            return self._select_follows(k + 1)
        return tok.up in ("SELECT", "WITH", "VALUES", "TABLE")

    def table_options(self, st: CreateTable) -> None:
        while not self.eof():
            if self.accept_op(","):
                continue
            if self.accept("WITH", "SYSTEM", "VERSIONING"):
                st.system_versioning = True
                continue
            if self.at_any("SELECT", "WITH", "VALUES", "AS", "IGNORE", "REPLACE") or self.at_op("("):
                st.select = True
                return  # CREATE ... SELECT: the rest is a query
            if self.at("PARTITION", "BY"):
                self.skip_until(frozenset(), frozenset({"SELECT", "AS", "IGNORE", "REPLACE"}))
                continue
            if self.accept("START", "TRANSACTION"):
                continue
            cs, coll = self.charset_option()
            if cs or coll:
                st.charset = cs or st.charset
                st.collation = coll or st.collation
                continue
            if self.at("SEQUENCE"):
                self.i += 1
                self.accept_eq()
                tok = self.next()
                st.sequence = tok.text not in ("0",) and tok.up not in ("NO", "0")
                continue
            self.table_option()

    def charset_option(self) -> tuple[str | None, str | None]:
        """[DEFAULT] CHARACTER SET|CHARSET [=] x  /  [DEFAULT] COLLATE [=] y."""
        save = self.i
        self.accept("DEFAULT")
        if self.accept("CHARACTER", "SET") or self.accept("CHARSET") or self.accept("CHAR", "SET"):
            self.accept_eq()
            return self.name_value(), None
        if self.accept("COLLATE"):
            self.accept_eq()
            return None, self.name_value()
        self.i = save
        return None, None

    def table_option(self) -> None:
        """One table option: NAME [=] value. Unknown names are refused unless `name = value`."""
        tok = self.peek()
        if tok is None:
            return
        if self.at("DATA", "DIRECTORY") or self.at("INDEX", "DIRECTORY"):
            self.i += 2
            self.accept_eq()
            self.string()
            return
        if tok.kind != "word":
            self.fail("expected a table option")
        known = tok.up in _TABLE_OPTIONS
        if not known and not self.at_op("=", 1):
            self.fail("unknown table option")
        self.i += 1
        self.accept_eq()
        if self.at_op("("):
            self.skip_group()
        else:
            self.next()

    def create_definition(self, st: CreateTable) -> None:
        constraint: str | None = None
        if self.accept("CONSTRAINT"):
            if not self.at_any("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                constraint = self.ident()
        if self.at_any("PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL"):
            st.indexes.append(self.index_definition(constraint))
            return
        if self.accept("FOREIGN", "KEY"):
            self.skip_until()
            return
        if self.accept("CHECK"):
            expr = self.group_text()
            if constraint is None:  # MariaDB names unnamed table CHECKs CONSTRAINT_1, _2, ...
                st.unnamed_checks += 1
                constraint = f"CONSTRAINT_{st.unnamed_checks}"
            col = _json_valid_column(expr)
            if col is not None:
                st.json_checks.append((constraint, col))
            self.skip_until()
            return
        if self.at("PERIOD", "FOR"):
            self.i += 2
            name = self.ident()
            self.expect_op("(")
            start = self.ident()
            self.expect_op(",")
            end = self.ident()
            self.expect_op(")")
            if name.upper() == "SYSTEM_TIME":
                st.period = (start, end)
            return
        if constraint is not None:
            self.fail("expected PRIMARY, UNIQUE, FOREIGN or CHECK after CONSTRAINT")
        st.columns.append(self.column_definition())

    def index_definition(self, constraint: str | None) -> IndexSpec:
        kind = "key"
        if self.accept("PRIMARY"):
            self.expect("KEY")
            kind = "primary"
        elif self.accept("UNIQUE"):
            kind = "unique"
            self.accept("INDEX") or self.accept("KEY")
        elif self.at_any("FULLTEXT", "SPATIAL"):
            kind = self.word().lower()
            self.accept("INDEX") or self.accept("KEY")
        else:
            self.word()  # INDEX | KEY
        if_not_exists = self._if_not_exists()
        name = None
        if not self.at_op("(") and not self.at_any("USING", "TYPE"):
            name = self.ident()
        if self.accept("USING") or self.accept("TYPE"):
            self.word()
        cols, prefixes = self.key_parts()
        self.skip_until()  # index options: COMMENT, USING, KEY_BLOCK_SIZE, VISIBLE, IGNORED...
        if kind == "primary":
            name = "PRIMARY"
        elif name is None:
            name = constraint
        return IndexSpec(kind, name, cols, prefixes, if_not_exists)

    def key_parts(self) -> tuple[list[str | None], list[int | None]]:
        self.expect_op("(")
        cols: list[str | None] = []
        prefixes: list[int | None] = []
        while True:
            if self.at_op("("):
                self.skip_group()
                cols.append(None)
                prefixes.append(None)
            else:
                cols.append(self.ident())
                prefix = None
                if self.accept_op("("):
                    prefix = self.number()
                    self.expect_op(")")
                prefixes.append(prefix)
            self.accept("ASC") or self.accept("DESC")
            if self.accept_op(","):
                continue
            self.expect_op(")")
            return cols, prefixes

    # columns --------------------------------------------------------------------------------
    def column_definition(self) -> ColumnSpec:
        name = self.ident()
        spec = self.data_type(name)
        self.column_attributes(spec)
        return spec

    def data_type(self, name: str) -> ColumnSpec:
        w = self.word()
        spec = ColumnSpec(name, "")
        national = False
        if w == "NATIONAL":
            national = True
            w = self.word()
        if w in ("NCHAR", "NVARCHAR"):
            national = True
            w = "CHAR" if w == "NCHAR" else "VARCHAR"
        if w == "LONG":
            if self.accept("VARBINARY"):
                spec.type = "mediumblob"
            else:
                self.accept("VARCHAR") or self.accept("CHAR", "VARYING")
                spec.type = "mediumtext"
        elif w in ("CHAR", "CHARACTER") and self.accept("VARYING"):
            spec.type = "varchar"
        elif w in ("CHAR", "CHARACTER"):
            spec.type = "char"
        elif w in ("VARCHAR", "VARCHARACTER", "VARCHAR2", "NVARCHAR2"):
            spec.type = "varchar"
            national = national or w == "NVARCHAR2"
        elif w in ("INT1", "TINYINT"):
            spec.type = "tinyint"
        elif w in ("BOOL", "BOOLEAN"):
            spec.type, spec.length = "tinyint", 1
        elif w in ("INT2", "SMALLINT"):
            spec.type = "smallint"
        elif w in ("INT3", "MEDIUMINT", "MIDDLEINT"):
            spec.type = "mediumint"
        elif w in ("INT", "INTEGER", "INT4"):
            spec.type = "int"
        elif w in ("INT8", "BIGINT"):
            spec.type = "bigint"
        elif w == "SERIAL":
            spec.type, spec.unsigned, spec.nullable = "bigint", True, False
            spec.auto_increment, spec.inline_key = True, "unique"
            return spec
        elif w in ("DEC", "DECIMAL", "NUMERIC", "FIXED", "NUMBER"):
            spec.type = "decimal"
        elif w in ("FLOAT", "FLOAT4"):
            spec.type = "float"
        elif w in ("DOUBLE", "FLOAT8"):
            self.accept("PRECISION")
            spec.type = "double"
        elif w == "REAL":
            spec.type = "float" if self.mode & MODE_REAL_AS_FLOAT else "double"
        elif w in ("TIMESTAMP",) and self.mode & MODE_MAXDB:
            spec.type = "datetime"
        elif w == "DATE" and self.mode & MODE_ORACLE:
            spec.type = "datetime"
        elif w == "CLOB":
            spec.type = "longtext"
        elif w == "RAW":
            spec.type = "varbinary"
        elif w == "GEOMCOLLECTION":
            spec.type = "geometrycollection"
        elif w.lower() in ("bit", "binary", "varbinary", "date", "time", "datetime", "timestamp",
                           "year", "json", "enum", "set", "vector") or w.lower() in TEXT_TYPES \
                or w.lower() in BLOB_TYPES or w.lower() in GEOMETRY_TYPES \
                or w.lower() in FIXED_BINARY_TYPES:
            spec.type = w.lower()
        else:
            self.i -= 1
            self.fail("unknown data type")
        if national:
            spec.charset = "utf8mb3"
        self.type_params(spec)
        self.type_attributes(spec)
        return spec

    def type_params(self, spec: ColumnSpec) -> None:
        t = spec.type
        if t in ("enum", "set"):
            self.expect_op("(")
            values = []
            while True:
                tok = self.next()
                if tok.kind == "word" and tok.text.startswith("_") and self.peek() is not None \
                        and self.peek().kind == "str":
                    tok = self.next()  # _utf8mb4'label'
                if tok.kind not in ("str", "hex", "bit"):
                    self.i -= 1
                    self.fail("expected an ENUM/SET label")
                values.append(_label(tok))
                if self.accept_op(","):
                    continue
                self.expect_op(")")
                break
            spec.values = tuple(values)
            return
        if not self.at_op("("):
            if t in ("char", "binary", "bit"):
                spec.length = 1
            elif t == "decimal":
                spec.precision, spec.scale = 10, 0
            return
        self.i += 1
        a = self.number()
        b = None
        if self.accept_op(","):
            b = self.number()
        self.expect_op(")")
        if t in INTEGER_TYPES:
            spec.length = a if (t == "tinyint" and a == 1) else spec.length
        elif t == "decimal":
            spec.precision, spec.scale = a, b or 0
        elif t in ("float", "double"):
            if b is not None:
                spec.precision, spec.scale = a, b
            elif t == "float" and a > 24:
                spec.type = "double"
        elif t in ("time", "datetime", "timestamp"):
            spec.fsp = a or None
        elif t in ("text", "blob"):
            spec.text_bytes = a
        elif t == "year":
            pass
        else:
            spec.length = a

    def type_attributes(self, spec: ColumnSpec) -> None:
        while True:
            if self.accept("UNSIGNED"):
                spec.unsigned = True
            elif self.accept("SIGNED"):
                spec.unsigned = False
            elif self.accept("ZEROFILL"):
                spec.zerofill = spec.unsigned = True
            elif self.accept("BINARY"):
                spec.binary_attr = True
            elif self.accept("ASCII"):
                spec.charset = "latin1"
            elif self.accept("UNICODE"):
                spec.charset = "ucs2"
            elif self.accept("BYTE"):
                spec.charset = "binary"
            elif self.accept("CHARACTER", "SET") or self.accept("CHARSET") or self.accept("CHAR", "SET"):
                spec.charset = self.name_value()
            elif self.at("COLLATE"):
                self.i += 1
                spec.collation = self.name_value()
            else:
                return

    def column_attributes(self, spec: ColumnSpec) -> None:
        while not self.eof() and not (self.at_op(",") or self.at_op(")")):
            if self.at_any("FIRST", "AFTER"):
                return  # ALTER ... ADD/CHANGE/MODIFY position
            if self.accept("NOT", "NULL"):
                spec.nullable = False
            elif self.accept("NULL"):
                spec.nullable = True
            elif self.accept("DEFAULT"):
                self.skip_expr()
            elif self.accept("AUTO_INCREMENT"):
                spec.auto_increment = True
            elif self.accept("UNIQUE"):
                self.accept("KEY")
                spec.inline_key = spec.inline_key or "unique"
            elif self.accept("PRIMARY", "KEY") or self.accept("KEY"):
                spec.inline_key = "primary"
            elif self.accept("COMMENT"):
                self.string()
            elif self.accept("COLLATE"):
                spec.collation = self.name_value()
            elif self.at_any("CHARACTER", "CHARSET", "ASCII", "UNICODE", "BINARY", "BYTE"):
                before = self.i
                self.type_attributes(spec)
                if self.i == before:
                    self.fail("unexpected column attribute")
            elif self.at_any("UNSIGNED", "SIGNED", "ZEROFILL"):
                self.type_attributes(spec)
            elif self.accept("COLUMN_FORMAT") or self.accept("STORAGE"):
                self.word()
            elif self.at_any("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
                self.i += 1
                self.accept_eq()
                self.string()
            elif self.accept("GENERATED", "ALWAYS"):
                self.expect("AS")
                self.generated(spec)
            elif self.accept("AS"):
                self.generated(spec)
            elif self.accept("INVISIBLE"):
                spec.invisible = True
            elif self.accept("VISIBLE"):
                spec.invisible = False
            elif self.accept("ON", "UPDATE"):
                self.skip_expr()
            elif self.accept("CONSTRAINT"):
                if not self.at("CHECK"):
                    self.ident()
            elif self.accept("CHECK"):
                expr = self.group_text()
                if _json_valid_column(expr) is not None and \
                        _json_valid_column(expr).lower() == spec.name.lower():
                    spec.json_check = True
                self.accept("NOT")
                self.accept("ENFORCED")
            elif self.accept("REFERENCES"):
                self.skip_until()
            elif self.accept("SERIAL", "DEFAULT", "VALUE"):
                spec.nullable, spec.auto_increment = False, True
                spec.inline_key = spec.inline_key or "unique"
            elif self.accept("WITH", "SYSTEM", "VERSIONING"):
                pass
            elif self.accept("WITHOUT", "SYSTEM", "VERSIONING"):
                pass
            elif self.accept("COMPRESSED"):
                if self.accept_op("="):
                    self.word()
            elif self.accept("SRID"):
                self.number()
            elif self.accept("REF_SYSTEM_ID"):
                self.accept_eq()
                self.number()
            elif self.accept("NOT", "SECONDARY"):
                pass
            else:
                self.fail("unknown column attribute")

    def generated(self, spec: ColumnSpec) -> None:
        if self.accept("ROW", "START"):
            spec.generated = "row_start"
            spec.nullable = False
            return
        if self.accept("ROW", "END"):
            spec.generated = "row_end"
            spec.nullable = False
            return
        spec.expression = self.group_text()
        if self.accept("STORED") or self.accept("PERSISTENT"):
            spec.generated = "stored"
        else:
            self.accept("VIRTUAL")
            spec.generated = "virtual"

    def position(self) -> tuple[str, str | None] | None:
        if self.accept("FIRST"):
            return ("first", None)
        if self.accept("AFTER"):
            return ("after", self.ident())
        return None

    # ALTER --------------------------------------------------------------------------------
    def alter(self) -> Statement:
        self.accept("ONLINE") or self.accept("OFFLINE")
        self.accept("IGNORE")
        if self.accept("TABLE"):
            st = AlterTable(self.text, TableRef(None, ""))
            st.if_exists = self._if_exists()
            st.table = self.qname()
            self._wait()
            while not self.eof():
                st.actions.append(self.alter_spec())
                if not self.accept_op(","):
                    break
            self.end()
            return st
        if self.at_any("DATABASE", "SCHEMA"):
            self.i += 1
            return self.database("alter")
        if self.accept("SEQUENCE"):
            return Ignored(self.text, "ALTER SEQUENCE")
        self._skip_definer_and_modifiers()
        return self._ignored_object()

    def alter_spec(self) -> tuple:
        if self.at("PARTITION", "BY"):
            self.skip_until(frozenset())
            return ("noop", "PARTITION BY")
        if self.accept("ADD"):
            return self.alter_add()
        if self.accept("CHANGE"):
            self.accept("COLUMN")
            if_exists = self._if_exists()
            old = self.ident()
            spec = self.column_definition_with_position()
            return ("change", old, spec[0], spec[1], if_exists)
        if self.accept("MODIFY"):
            self.accept("COLUMN")
            if_exists = self._if_exists()
            spec = self.column_definition_with_position()
            return ("change", spec[0].name, spec[0], spec[1], if_exists)
        if self.accept("DROP"):
            return self.alter_drop()
        if self.accept("ALTER"):
            return self.alter_alter()
        if self.accept("RENAME"):
            if self.accept("COLUMN"):
                old = self.ident()
                self.expect("TO")
                return ("rename_column", old, self.ident())
            if self.accept("INDEX") or self.accept("KEY"):
                old = self.ident()
                self.expect("TO")
                return ("rename_index", old, self.ident())
            self.accept("TO") or self.accept("AS")
            return ("rename", self.qname())
        if self.accept("CONVERT", "TO"):
            cs, coll = self.charset_option()
            if cs is None:
                self.fail("expected CHARACTER SET")
            c2 = self.charset_option()[1]
            return ("convert", cs, coll or c2)
        if self.accept("CONVERT", "PARTITION"):
            self.ident()
            self.expect("TO", "TABLE")
            return ("partition_to_table", self.qname())
        if self.accept("CONVERT", "TABLE"):
            ref = self.qname()
            self.skip_until(frozenset({","}))
            return ("table_to_partition", ref)
        cs, coll = self.charset_option()
        if cs or coll:
            c2 = self.charset_option()[1] if cs else None
            return ("default_charset", cs, coll or c2)
        if self.accept("ORDER", "BY"):
            self.skip_until(frozenset({","}))
            return ("noop", "ORDER BY")
        if self.at_any("ALGORITHM", "LOCK"):
            self.i += 1
            self.accept_eq()
            self.word()
            return ("noop", "ALGORITHM/LOCK")
        if self.accept("FORCE"):
            return ("noop", "FORCE")
        if self.accept("ENABLE", "KEYS") or self.accept("DISABLE", "KEYS"):
            return ("noop", "KEYS")
        if self.at_any("DISCARD", "IMPORT") and self.peek(1) is not None \
                and self.peek(1).up == "TABLESPACE":
            self.i += 2
            return ("noop", "TABLESPACE")
        if self.accept("WITH", "VALIDATION") or self.accept("WITHOUT", "VALIDATION"):
            return ("noop", "VALIDATION")
        if self.at_any(*_PARTITION_OPS) and self.peek(1) is not None and \
                self.peek(1).up in ("PARTITION", "PARTITIONING"):
            self.skip_until(frozenset({","}))
            return ("noop", "partition maintenance")
        if self.accept("REMOVE", "PARTITIONING"):
            return ("noop", "REMOVE PARTITIONING")
        self.table_option()
        return ("noop", "table option")

    def column_definition_with_position(self) -> tuple[ColumnSpec, tuple[str, str | None] | None]:
        spec = self.column_definition()
        return spec, self.position()

    def alter_add(self) -> tuple:
        if self.accept("SYSTEM", "VERSIONING"):
            return ("add_versioning",)
        if self.at("PERIOD"):
            self.i += 1
            self._if_not_exists()
            self.expect("FOR")
            name = self.ident()
            self.expect_op("(")
            start = self.ident()
            self.expect_op(",")
            end = self.ident()
            self.expect_op(")")
            return ("add_period", start, end) if name.upper() == "SYSTEM_TIME" else ("noop", "PERIOD")
        if self.at("PARTITION"):
            self.skip_until(frozenset({","}))
            return ("noop", "ADD PARTITION")
        constraint: str | None = None
        save = self.i
        if self.accept("CONSTRAINT"):
            self._if_not_exists()
            if not self.at_any("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                constraint = self.ident()
        if self.at_any("PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL"):
            return ("add_index", self.index_definition(constraint))
        if self.accept("FOREIGN", "KEY"):
            self.skip_until(frozenset({","}))
            return ("noop", "FOREIGN KEY")
        if self.accept("CHECK"):
            expr = self.group_text()
            self.accept("NOT")
            self.accept("ENFORCED")
            col = _json_valid_column(expr)
            return ("add_json_check", constraint or "", col) if col else ("noop", "CHECK")
        self.i = save
        self.accept("COLUMN")
        if_not_exists = self._if_not_exists()
        if self.at_op("("):
            self.i += 1
            specs = []
            while True:
                specs.append(self.column_definition())
                if self.accept_op(","):
                    continue
                self.expect_op(")")
                break
            return ("add_columns", specs, None, if_not_exists)
        spec, pos = self.column_definition_with_position()
        return ("add_columns", [spec], pos, if_not_exists)

    def alter_drop(self) -> tuple:
        if self.accept("PRIMARY", "KEY"):
            return ("drop_index", "PRIMARY", False)
        if self.accept("INDEX") or self.accept("KEY"):
            if_exists = self._if_exists()
            return ("drop_index", self.ident(), if_exists)
        if self.accept("FOREIGN", "KEY"):
            self._if_exists()
            self.ident()
            return ("noop", "DROP FOREIGN KEY")
        if self.accept("CONSTRAINT") or self.accept("CHECK"):
            if_exists = self._if_exists()
            return ("drop_constraint", self.ident(), if_exists)
        if self.accept("SYSTEM", "VERSIONING"):
            return ("drop_versioning",)
        if self.accept("PERIOD"):
            self._if_exists()
            self.expect("FOR")
            name = self.ident()
            return ("drop_period",) if name.upper() == "SYSTEM_TIME" else ("noop", "PERIOD")
        if self.at("PARTITION"):
            self.skip_until(frozenset({","}))
            return ("noop", "DROP PARTITION")
        self.accept("COLUMN")
        if_exists = self._if_exists()
        name = self.ident()
        self.accept("RESTRICT") or self.accept("CASCADE")
        return ("drop_column", name, if_exists)

    def alter_alter(self) -> tuple:
        if self.accept("INDEX") or self.accept("KEY") or self.accept("CHECK") or self.accept("CONSTRAINT"):
            self.ident()
            self.skip_until(frozenset({","}))
            return ("noop", "ALTER INDEX/CHECK")
        self.accept("COLUMN")
        self._if_exists()
        name = self.ident()
        if self.accept("SET", "DEFAULT") or self.accept("DEFAULT"):
            self.skip_expr()
            return ("noop", "SET DEFAULT")
        if self.accept("DROP", "DEFAULT"):
            return ("noop", "DROP DEFAULT")
        if self.accept("SET", "INVISIBLE"):
            return ("set_visibility", name, True)
        if self.accept("SET", "VISIBLE"):
            return ("set_visibility", name, False)
        self.fail("unknown ALTER COLUMN action")
        raise AssertionError

    # DROP / RENAME --------------------------------------------------------------------------
    def drop(self) -> Statement:
        temporary = self.accept("TEMPORARY")
        if self.accept("TABLE") or self.accept("TABLES") or self.accept("SEQUENCE"):
            is_seq = self.t[self.i - 1].up == "SEQUENCE"
            if_exists = self._if_exists()
            refs = [self.qname()]
            while self.accept_op(","):
                refs.append(self.qname())
            self._wait()
            self.accept("RESTRICT") or self.accept("CASCADE")
            self.end()
            return DropTables(self.text, refs, if_exists, temporary, is_seq)
        if self.at_any("DATABASE", "SCHEMA"):
            self.i += 1
            return self.database("drop")
        if self.accept("INDEX"):
            if_exists = self._if_exists()
            name = self.ident()
            self.expect("ON")
            ref = self.qname()
            self.skip_until(frozenset())
            return DropIndex(self.text, ref, name, if_exists)
        return self._ignored_object()

    def rename(self) -> Statement:
        if not (self.accept("TABLE") or self.accept("TABLES")):
            return Ignored(self.text, "RENAME " + (self.peek().up if self.peek() else ""))
        if_exists = self._if_exists()
        pairs = []
        while True:
            a = self.qname()
            self._wait()
            self.expect("TO")
            pairs.append((a, self.qname()))
            if not self.accept_op(","):
                break
        self.end()
        return RenameTables(self.text, pairs, if_exists)

    # indexes, databases, sequences ----------------------------------------------------------
    def create_index(self, or_replace: bool) -> Statement:
        kind = "key"
        if self.at_any("UNIQUE", "FULLTEXT", "SPATIAL"):
            kind = self.word().lower()
        if not (self.accept("INDEX") or self.accept("KEY")):
            return self._ignored_object()
        if_not_exists = self._if_not_exists()
        name = self.ident()
        if self.accept("USING") or self.accept("TYPE"):
            self.word()
        self.expect("ON")
        ref = self.qname()
        cols, prefixes = self.key_parts()
        self.skip_until(frozenset())
        return CreateIndex(self.text, ref, IndexSpec(kind, name, cols, prefixes, if_not_exists),
                           or_replace)

    def database(self, action: str, or_replace: bool = False) -> Statement:
        st = DatabaseStmt(self.text, action, None, or_replace=or_replace)
        if action == "drop":
            st.if_exists = self._if_exists()
            st.name = self.ident()
            self.end()
            return st
        if action == "create":
            st.if_not_exists = self._if_not_exists()
        if action == "create" or (not self.eof() and self.peek().kind in ("word", "qid")
                                  and self.peek().up not in ("DEFAULT", "CHARACTER", "CHARSET",
                                                             "COLLATE", "COMMENT", "READ",
                                                             "ENCRYPTION", "UPGRADE")):
            st.name = self.ident()
        if self.at("UPGRADE"):
            return Ignored(self.text, "ALTER DATABASE UPGRADE")
        while not self.eof():
            cs, coll = self.charset_option()
            if cs or coll:
                st.charset = cs or st.charset
                st.collation = coll or st.collation
                continue
            self.accept("DEFAULT")
            if self.at_any("COMMENT", "ENCRYPTION"):
                self.i += 1
                self.accept_eq()
                self.next()
            elif self.accept("READ", "ONLY"):
                self.accept_eq()
                self.next()
            else:
                self.fail("unknown database option")
        return st

    def create_sequence(self, or_replace: bool, temporary: bool) -> Statement:
        st = CreateSequence(self.text, TableRef(None, ""), or_replace=or_replace, temporary=temporary)
        st.if_not_exists = self._if_not_exists()
        st.table = self.qname()
        if self.accept("AS"):
            st.value_type = self.data_type("next_not_cached_value")
        self.skip_until(frozenset())  # START WITH, INCREMENT BY, CACHE, CYCLE, ENGINE=...
        return st


def _label(tok: Tok) -> str:
    if tok.kind == "hex":
        digits = tok.text if len(tok.text) % 2 == 0 else "0" + tok.text
        return bytes.fromhex(digits).decode("utf-8", "replace")
    return tok.text.rstrip(" ")  # the server strips trailing spaces from ENUM/SET labels


_JSON_VALID_RE = re.compile(r"^\s*json_valid\s*\(\s*[`\"]?([^`\"()\s]+)[`\"]?\s*\)\s*$", re.I)


def _json_valid_column(expr: str) -> str | None:
    m = _JSON_VALID_RE.match(expr)
    return m.group(1) if m else None


_COMPOUND_RE = re.compile(
    r"^\s*(CREATE|ALTER|DROP)\s+(OR\s+REPLACE\s+)?(DEFINER\s*=\s*\S+\s+)?(AGGREGATE\s+)?"
    r"(PROCEDURE|FUNCTION|TRIGGER|EVENT|PACKAGE)\b|^\s*BEGIN\s+NOT\s+ATOMIC\b", re.I)


def parse(sql: str, sql_mode: int = 0) -> list[Statement]:
    """Parse one QUERY event's text into statements (usually one)."""
    text = unwrap_versioned_comments(sql)
    if _COMPOUND_RE.match(text):
        return [Ignored(sql, "routine")]  # bodies hold `;` and statements not executed now
    toks = tokenize(text, sql_mode)
    out: list[Statement] = []
    for stmt_toks in split_statements(toks):
        span = text[stmt_toks[0].start:stmt_toks[-1].end]
        rebased = [Tok(t.kind, t.text, t.start - stmt_toks[0].start, t.end - stmt_toks[0].start)
                   for t in stmt_toks]
        out.append(_Parser(rebased, span, sql_mode).statement())
    return out


_TABLE_AFTER_RE = re.compile(
    r"\b(?:TABLE|TABLES|INTO|ON|LIKE|TO|EXISTS|SEQUENCE)\s+"
    r"((?:`[^`]+`|\w+)(?:\s*\.\s*(?:`[^`]+`|\w+))?)", re.I)


def guess_tables(sql: str) -> list[TableRef]:
    """Table names an unparseable statement probably touches (for deciding whether it matters)."""
    out = []
    for m in _TABLE_AFTER_RE.finditer(unwrap_versioned_comments(sql)):
        parts = [p.strip().strip("`") for p in re.split(r"\s*\.\s*", m.group(1), maxsplit=1)]
        if parts[-1].upper() in ("IF", "EXISTS", "NOT"):
            continue
        out.append(TableRef(parts[0], parts[1]) if len(parts) == 2 else TableRef(None, parts[0]))
    return out


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


def apply(stmt: Statement, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    """Apply one statement to `cat` in place (the caller passes a copy); returns table changes."""
    if isinstance(stmt, Ignored):
        return []
    handler = _HANDLERS[type(stmt)]
    return handler(stmt, cat, ctx)


def _key(ref: TableRef, cat: Catalog, ctx: ApplyContext) -> tuple[str, str]:
    return cat.key(ref.schema or ctx.default_schema, ref.name)


def _require(cat: Catalog, key: tuple[str, str], ctx: ApplyContext, stmt: Statement) -> TableDef | None:
    """The tracked table, None for an untracked unknown one; error for a tracked unknown one."""
    t = cat.tables.get(key)
    if t is None and ctx.tracked(*key):
        raise UnknownTableError(f"table {key[0]}.{key[1]} is not in the schema history "
                                f"(statement: {_clip(stmt.text)})")
    return t


def _table_defaults(st_charset: str | None, st_collation: str | None, schema: str,
                    cat: Catalog) -> tuple[str, str]:
    colls = cat.collations
    if st_charset is None and st_collation is None:
        return cat.database_defaults(schema)
    cs = colls.canonical_charset(st_charset) if st_charset else colls.charset_of(st_collation or "")
    if cs is None:
        raise SchemaError(f"unknown collation {st_collation}")
    coll = colls.canonical_collation(st_collation) if st_collation else colls.default_collation(cs)
    return cs, coll


def resolve_column(spec: ColumnSpec, table_cs: str, table_coll: str, colls: Collations) -> Column:
    """Column as the server stores it: charset from the table default, BINARY attribute, TEXT(n)."""
    t = spec.type
    cs = colls.canonical_charset(spec.charset) if spec.charset else None
    coll = colls.canonical_collation(spec.collation) if spec.collation else None
    if t in CHARACTER_TYPES:
        if coll and not cs:
            cs = colls.charset_of(coll)
        if cs == "binary":
            t = {"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
                 "mediumtext": "mediumblob", "longtext": "longblob"}.get(t, t)
            coll = "binary"
            if t not in CHARACTER_TYPES:  # a binary string type has no charset at all
                cs = coll = None
        elif cs is None:
            cs, coll = table_cs, coll or table_coll
        if cs is not None and cs != "binary":
            if spec.binary_attr:
                coll = colls.bin_collation(cs)
            elif coll is None:
                coll = colls.default_collation(cs)
    elif t in ("json",):
        cs, coll = "utf8mb4", "utf8mb4_bin"
    else:
        cs = coll = None
    if t in ("text", "blob") and spec.text_bytes is not None:
        need = spec.text_bytes * (colls.width(cs) if t == "text" else 1)
        size = next(n for n, cap in sorted(BLOB_CAPACITY.items()) if need <= cap or n == 4)
        t = ({v: k for k, v in TEXT_TYPES.items()} if t == "text"
             else {v: k for k, v in BLOB_TYPES.items()})[size]
    return Column(
        name=spec.name, type=t, length=spec.length, precision=spec.precision, scale=spec.scale,
        fsp=spec.fsp, unsigned=spec.unsigned, zerofill=spec.zerofill, charset=cs, collation=coll,
        values=spec.values, nullable=(spec.nullable if spec.nullable is not None
                                      else spec.inline_key != "primary"),
        generated=spec.generated, expression=spec.expression, invisible=spec.invisible,
        is_json=spec.json_check, auto_increment=spec.auto_increment)


def _index_from_spec(ix: IndexSpec, existing: list[Index]) -> Index:
    name = ix.name
    if name is None:  # the server names an unnamed key after its first column, then _2, _3
        base = next((c for c in ix.columns if c is not None), "functional_index")
        taken = {i.name.lower() for i in existing}
        name, n = base, 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
    return Index(name, ix.kind, tuple(ix.columns), tuple(ix.prefixes))


def _not_null_key_columns(cols: list[Column], index: Index) -> list[Column]:
    """PRIMARY KEY columns are NOT NULL whatever the definition said."""
    if index.kind != "primary":
        return cols
    names = {c.lower() for c in index.columns if c is not None}
    return [replace(c, nullable=False) if c.key in names else c for c in cols]


def implicit_period_columns() -> list[Column]:
    """MariaDB's row_start/row_end for WITH SYSTEM VERSIONING without a PERIOD."""
    ts = dict(type="timestamp", fsp=6, nullable=False, invisible=True, implicit=True)
    return [Column("row_start", generated="row_start", **ts),  # type: ignore[arg-type]
            Column("row_end", generated="row_end", **ts)]  # type: ignore[arg-type]


def _apply_create(st: CreateTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    if st.temporary:
        return []  # row-based binlogs never carry rows of temporary tables
    key = _key(st.table, cat, ctx)
    existed = key in cat.tables
    if existed and st.if_not_exists:
        return []
    if st.like is not None:
        src = _require(cat, _key(st.like, cat, ctx), ctx, st)
        if src is None:
            if ctx.tracked(*key):
                raise UnknownTableError(f"CREATE TABLE {st.table} LIKE {st.like}: source unknown")
            return []
        new = src.renamed(*key)
    else:
        if st.select and not st.columns:
            raise DdlParseError("CREATE TABLE ... SELECT without column definitions: the column "
                                "types come from the query", st.text)
        table_cs, table_coll = _table_defaults(st.charset, st.collation, key[0], cat)
        cols = [resolve_column(c, table_cs, table_coll, cat.collations) for c in st.columns]
        indexes: list[Index] = []
        for spec, col in zip(st.columns, cols):
            if spec.inline_key:
                kind = spec.inline_key
                indexes.append(_index_from_spec(IndexSpec(kind, "PRIMARY" if kind == "primary" else None,
                                                          [col.name], [None]), indexes))
        for ix in st.indexes:
            indexes.append(_index_from_spec(ix, indexes))
        for ix in indexes:
            cols = _not_null_key_columns(cols, ix)
        names = {c.key for c in cols}
        checks = [(n, c) for n, c in st.json_checks if c.lower() in names]
        if st.system_versioning and not any(c.generated == "row_start" for c in cols):
            cols += implicit_period_columns()
        indexes.sort(key=lambda i: 0 if i.kind == "primary" else 1)
        new = TableDef(key[0], key[1], tuple(cols), tuple(indexes), table_cs, table_coll,
                       system_versioned=st.system_versioning,
                       kind="sequence" if st.sequence else "table",
                       json_checks=tuple(checks))
    cat.tables[key] = new
    return [TableChange("create", key, new)]


def _apply_sequence(st: CreateSequence, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    if st.temporary:
        return []
    key = _key(st.table, cat, ctx)
    if key in cat.tables and st.if_not_exists:
        return []
    big = dict(type="bigint", nullable=False)
    value = dict(big)
    if st.value_type is not None:
        value = dict(type=st.value_type.type, unsigned=st.value_type.unsigned, nullable=False)
    # the columns every MariaDB sequence table has (SHOW CREATE SEQUENCE ... as a table)
    cols = [Column(n, **value) for n in  # type: ignore[arg-type]
            ("next_not_cached_value", "minimum_value", "maximum_value", "start_value")]
    cols += [Column("increment", **big), Column("cache_size", unsigned=True, **big),  # type: ignore[arg-type]
             Column("cycle_option", type="tinyint", length=1, unsigned=True, nullable=False),
             Column("cycle_count", **big)]  # type: ignore[arg-type]
    new = TableDef(key[0], key[1], tuple(cols), kind="sequence")
    cat.tables[key] = new
    return [TableChange("create", key, new)]


def _apply_drop(st: DropTables, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    out = []
    for ref in st.tables:
        key = _key(ref, cat, ctx)
        if key in cat.tables:  # an unknown table being dropped corrupts nothing
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
    return out


def _apply_rename(st: RenameTables, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    out = []
    for a, b in st.pairs:
        ka, kb = _key(a, cat, ctx), _key(b, cat, ctx)
        t = cat.tables.pop(ka, None)
        if t is None:
            if ctx.tracked(*ka) and not st.if_exists:
                raise UnknownTableError(f"RENAME TABLE {a}: table not in the schema history")
            if ctx.tracked(*kb):
                raise UnknownTableError(f"RENAME TABLE {a} TO {b}: source unknown, target tracked")
            continue
        new = t.renamed(*kb)
        cat.tables[kb] = new
        out.append(TableChange("rename", kb, new, old_key=ka))
    return out


def _apply_truncate(st: TruncateTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = _key(st.table, cat, ctx)
    t = _require(cat, key, ctx, st)
    return [] if t is None else [TableChange("truncate", key, t)]


def _apply_database(st: DatabaseStmt, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    name = cat.norm(st.name or ctx.default_schema)
    if st.action == "drop":
        cat.databases.pop(name, None)
        out = []
        for key in [k for k in cat.tables if k[0] == name]:
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
        return out
    if st.action == "create" and name in cat.databases and st.if_not_exists:
        return []
    out = []
    if st.action == "create" and st.or_replace:
        for key in [k for k in cat.tables if k[0] == name]:
            del cat.tables[key]
            out.append(TableChange("drop", key, None))
    cs, coll = st.charset, st.collation
    if cs is None and coll is None:
        if st.action == "alter":
            return out
        cs = ctx.server_charset or cat.server_charset
    if cs is None and coll is not None:
        cs = cat.collations.charset_of(coll)
    elif cs is not None:
        cs = cat.collations.canonical_charset(cs)
        if coll is None:
            coll = cat.collations.default_collation(cs)
    cat.databases[name] = DatabaseDef(name, cs, coll)
    return out


def _apply_create_index(st: CreateIndex, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = _key(st.table, cat, ctx)
    t = _require(cat, key, ctx, st)
    if t is None:
        return []
    edit = _TableEdit(t, cat, ctx)
    if st.or_replace:
        edit.drop_index(st.index.name or "", True)
    edit.add_index(st.index)
    new = edit.result()
    cat.tables[key] = new
    return [TableChange("alter", key, new)]


def _apply_drop_index(st: DropIndex, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = _key(st.table, cat, ctx)
    t = _require(cat, key, ctx, st)
    if t is None:
        return []
    edit = _TableEdit(t, cat, ctx)
    edit.drop_index(st.name, st.if_exists)
    new = edit.result()
    cat.tables[key] = new
    return [TableChange("alter", key, new)]


class _TableEdit:
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

    def _fail(self, msg: str) -> None:
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
            i = j + 1  # type: ignore[operator]
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
        orig, cid, prev = self.cols[i]  # type: ignore[index]
        col = self._resolve(spec, cid)
        if prev.implicit and col.generated == prev.generated:
            col = replace(col, implicit=True, invisible=True)
        if pos is None:
            self.cols[i] = (orig, cid, col)  # type: ignore[index]
        else:
            del self.cols[i]  # type: ignore[arg-type]
            self._insert_at((orig, cid, col), pos)

    def drop_column(self, name: str, if_exists: bool) -> None:
        i = self._find_old(name)
        if i is None:
            if if_exists:
                return
            self._fail(f"unknown column {name}")
        _, cid, _ = self.cols.pop(i)  # type: ignore[arg-type]
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
        orig, cid, col = self.cols[i]  # type: ignore[index]
        self.cols[i] = (orig, cid, replace(col, name=new))  # type: ignore[index]

    def set_visibility(self, name: str, invisible: bool) -> None:
        i = self._find_old(name)
        if i is None:
            self._fail(f"unknown column {name}")
        orig, cid, col = self.cols[i]  # type: ignore[index]
        self.cols[i] = (orig, cid, replace(col, invisible=invisible))  # type: ignore[index]

    def add_index(self, spec: IndexSpec) -> None:
        parts = []
        for c, p in zip(spec.columns, spec.prefixes):
            if c is None:
                parts.append((None, p))
                continue
            i = self._find_new(c)
            if i is None:
                self._fail(f"key column {c} does not exist")
            parts.append((self.cols[i][1], p))  # type: ignore[index]
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
    "add_columns": _TableEdit.add_columns,
    "change": _TableEdit.change,
    "drop_column": _TableEdit.drop_column,
    "rename_column": _TableEdit.rename_column,
    "set_visibility": _TableEdit.set_visibility,
    "add_index": _TableEdit.add_index,
    "drop_index": _TableEdit.drop_index,
    "rename_index": _TableEdit.rename_index,
    "add_json_check": _TableEdit.add_json_check,
    "convert": _TableEdit.convert,
    "default_charset": _TableEdit.default_charset,
    "add_versioning": _TableEdit.add_versioning,
    "drop_versioning": _TableEdit.drop_versioning,
}


def _apply_alter(st: AlterTable, cat: Catalog, ctx: ApplyContext) -> list[TableChange]:
    key = _key(st.table, cat, ctx)
    t = cat.tables.get(key)
    if t is None:
        if st.if_exists or not ctx.tracked(*key):
            # an untracked table may still be renamed into the tracked scope
            for action in st.actions:
                if action[0] == "rename" and ctx.tracked(*_key(action[1], cat, ctx)):
                    raise UnknownTableError(f"ALTER TABLE {st.table} RENAME into a tracked name; "
                                            "the source is not in the schema history")
            return []
        raise UnknownTableError(f"ALTER TABLE {st.table}: table not in the schema history")
    edit = _TableEdit(t, cat, ctx)
    extra: list[TableChange] = []
    for action in st.actions:
        op, args = action[0], action[1:]
        if op in ("noop", "add_period", "drop_period"):
            continue
        if op == "drop_constraint":
            edit.drop_constraint(args[0])
        elif op == "rename":
            edit.rename_to = _key(args[0], cat, ctx)
        elif op == "partition_to_table":  # MariaDB 10.7: the partition becomes a table
            nk = _key(args[0], cat, ctx)
            extra.append(TableChange("create", nk, t.renamed(*nk)))
        elif op == "table_to_partition":  # ... and a table becomes a partition
            ok = _key(args[0], cat, ctx)
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


_HANDLERS: dict[type, Callable[..., list[TableChange]]] = {
    CreateTable: _apply_create,
    CreateSequence: _apply_sequence,
    AlterTable: _apply_alter,
    DropTables: _apply_drop,
    RenameTables: _apply_rename,
    TruncateTable: _apply_truncate,
    DatabaseStmt: _apply_database,
    CreateIndex: _apply_create_index,
    DropIndex: _apply_drop_index,
}


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


def parse_column_type(text: str, name: str = "c") -> ColumnSpec:
    """A type as information_schema.COLUMNS.COLUMN_TYPE spells it (`int(10) unsigned`)."""
    p = _Parser(tokenize(text), text, 0)
    spec = p.data_type(name)
    p.end()
    return spec
