"""The MySQL/MariaDB DDL grammar: `Parser` and the `parse()` entry points."""
from __future__ import annotations

import re
from typing import NoReturn

from ..model import BLOB_TYPES, FIXED_BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, TEXT_TYPES
from .lexer import (
    DdlParseError, MODE_MAXDB, MODE_ORACLE, MODE_REAL_AS_FLOAT, Tok, split_statements, tokenize,
    unwrap_versioned_comments,
)
from .statements import (
    AlterAction, AlterTable, ColumnSpec, CreateIndex, CreateSequence, CreateTable, DatabaseStmt, DropIndex,
    DropTables, Ignored, IndexSpec, RenameTables, Statement, TableRef, TruncateTable,
)


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


class Parser:
    def __init__(self, toks: list[Tok], text: str, sql_mode: int) -> None:
        self.t = toks
        self.i = 0
        self.text = text
        self.mode = sql_mode

    # -- cursor helpers --------------------------------------------------------------------
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def peek_kind(self, k: int = 0) -> str:
        """The kind of the token `k` ahead, "" at the end."""
        tok = self.peek(k)
        return tok.kind if tok is not None else ""

    def peek_up(self, k: int = 0) -> str:
        """The upper-cased keyword `k` ahead, "" at the end or on a non-word."""
        tok = self.peek(k)
        return tok.up if tok is not None else ""

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

    def fail(self, msg: str) -> NoReturn:
        tok = self.peek()
        got = f", found {tok.text!r}" if tok is not None else ", found end of statement"
        raise DdlParseError(msg + got, self.text, tok.start if tok is not None else None)

    def next(self) -> Tok:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end")
        self.i += 1
        return tok

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

    def qname(self) -> TableRef:
        a = self.ident()
        if self.at_op(".") and self.peek_kind(1) in ("word", "qid"):
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
                while self.peek_kind() == "str":
                    self.i += 1
            elif tok.kind == "word":
                while self.at_op(".") and self.peek_kind(1) in ("word", "qid"):
                    self.i += 2
                if self.at_op("("):
                    self.skip_group()
                elif self.peek_kind() == "str" and tok.text.startswith("_"):
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
        if self.at_op("(") and self.peek_up(1) == "LIKE":
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
                if tok.kind == "word" and tok.text.startswith("_") and self.peek_kind() == "str":
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
                checked = _json_valid_column(expr)
                if checked is not None and checked.lower() == spec.name.lower():
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

    def alter_spec(self) -> AlterAction:
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
        if self.at_any("DISCARD", "IMPORT") and self.peek_up(1) == "TABLESPACE":
            self.i += 2
            return ("noop", "TABLESPACE")
        if self.accept("WITH", "VALIDATION") or self.accept("WITHOUT", "VALIDATION"):
            return ("noop", "VALIDATION")
        if self.at_any(*_PARTITION_OPS) and self.peek_up(1) in ("PARTITION", "PARTITIONING"):
            self.skip_until(frozenset({","}))
            return ("noop", "partition maintenance")
        if self.accept("REMOVE", "PARTITIONING"):
            return ("noop", "REMOVE PARTITIONING")
        self.table_option()
        return ("noop", "table option")

    def column_definition_with_position(self) -> tuple[ColumnSpec, tuple[str, str | None] | None]:
        spec = self.column_definition()
        return spec, self.position()

    def alter_add(self) -> AlterAction:
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

    def alter_drop(self) -> AlterAction:
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

    def alter_alter(self) -> AlterAction:
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
            return Ignored(self.text, "RENAME " + self.peek_up())
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
        if action == "create" or (self.peek_kind() in ("word", "qid")
                                  and self.peek_up() not in ("DEFAULT", "CHARACTER", "CHARSET",
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
        out.append(Parser(rebased, span, sql_mode).statement())
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


def parse_column_type(text: str, name: str = "c") -> ColumnSpec:
    """A type as information_schema.COLUMNS.COLUMN_TYPE spells it (`int(10) unsigned`)."""
    p = Parser(tokenize(text), text, 0)
    spec = p.data_type(name)
    p.end()
    return spec
