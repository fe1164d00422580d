"""Lexing of DDL text: sql_mode bits, sqlglot-based tokens and statement splitting."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from ...errors import SchemaError


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
        super().__init__(f"{message}{where} in: {clip_text(statement)}")


def clip_text(s: str, n: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n] + "..."


# -- lexing -----------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _sqlglot() -> dict[str, Any]:
    """sqlglot's MySQL tokenizers, loaded on the first DDL to read (importing sqlglot is
    slow, and every `binlake stream` would otherwise pay for it at start)."""
    from sqlglot.dialects.mysql import MySQL
    from sqlglot.errors import TokenError
    from sqlglot import TokenType

    class _Tokenizer(MySQL.Tokenizer):
        # sqlglot swallows the rest of a statement after "command" keywords (RENAME, SHOW,
        # ...) into one string; binlake parses those statements itself.
        COMMANDS: ClassVar[set[TokenType]] = set()

    class _AnsiTokenizer(_Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']

    class _AnsiNoEscTokenizer(_Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']
        STRING_ESCAPES = ["'"]

    class _NoEscTokenizer(_Tokenizer):
        STRING_ESCAPES = ["'", '"']

    kinds = {TokenType.IDENTIFIER: "qid", TokenType.STRING: "str",
             TokenType.NATIONAL_STRING: "str", TokenType.RAW_STRING: "str",
             TokenType.BYTE_STRING: "str", TokenType.HEX_STRING: "hex",
             TokenType.BIT_STRING: "bit", TokenType.NUMBER: "num"}
    return {"plain": _Tokenizer, "ansi": _AnsiTokenizer, "ansi_noesc": _AnsiNoEscTokenizer,
            "noesc": _NoEscTokenizer, "error": TokenError, "kinds": kinds}


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
    sg = _sqlglot()
    cls = sg["ansi_noesc" if ansi and noesc else "ansi" if ansi else "noesc" if noesc else "plain"]
    kinds = sg["kinds"]
    try:
        raw = cls().tokenize(sql)
    except sg["error"] as exc:
        raise DdlParseError(f"cannot tokenize: {exc}", sql) from None
    toks: list[Tok] = []
    for t in raw:
        start, end = t.start, t.end + 1
        kind = kinds.get(t.token_type)
        if kind is not None:
            toks.append(Tok(kind, t.text, start, end))
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
