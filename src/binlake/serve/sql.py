"""The little SQL that binlake's primary answers: splitting, quoting, variables, literals.

Replicas and tools send a handful of statements before a dump (SELECT @@vars, SET @vars,
SHOW ...); this is the lexing those answers need, not a SQL parser.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ER_PARSE_ERROR = 1064

_IDENT = r"[A-Za-z0-9_$.]+"
_SYSVAR = re.compile(r"^@@(?:(global|session|local)\.)?([A-Za-z0-9_]+)$", re.I)
_USERVAR = re.compile(r"^@(?:`([^`]+)`|'([^']+)'|\"([^\"]+)\"|(" + _IDENT + "))$")
_FUNC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)$", re.S)
_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$")
_ALIAS = re.compile(r"^(.*?)\s+(?:AS\s+)?(`[^`]+`|'[^']*'|\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*)$", re.I | re.S)


class SqlError(Exception):
    """A statement binlake's primary cannot answer: carries the MySQL error code and state."""

    def __init__(self, code: int, message: str, state: str = "HY000") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.state = state


def parse_error(sql: str, near: str | None = None) -> SqlError:
    """ER_PARSE_ERROR (1064) worded as MySQL words it (drivers match on the code)."""
    near = sql if near is None else near
    return SqlError(1064, "You have an error in your SQL syntax; check the manual that corresponds "
                          f"to your MySQL server version for the right syntax to use near '{near[:80]}' "
                          "at line 1", "42000")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside quotes and parentheses."""
    out: list[str] = []
    depth = 0
    quote: str | None = None
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch == "(":
            depth += 1
            cur.append(ch)
        elif ch == ")":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    tail = "".join(cur).strip()
    if tail or out:
        out.append(tail)
    return out


def find_keyword(text: str, word: str) -> int | None:
    """Offset of ``word`` as a whole word outside quotes and parentheses (None if absent)."""
    depth = 0
    quote: str | None = None
    i = 0
    n = len(word)
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif (depth == 0 and text[i:i + n].upper() == word.upper()
              and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_@$"))
              and (i + n == len(text) or not (text[i + n].isalnum() or text[i + n] == "_"))):
            return i
        i += 1
    return None


def unquote(text: str) -> str:
    """A SQL string literal's value ('it''s', "a\\nb")."""
    q = text[0]
    body = text[1:-1]
    if q == "`":
        return body.replace("``", "`")
    body = body.replace(q + q, q)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "0": "\0", "r": "\r"}.get(m.group(1), m.group(1)), body)


def is_quoted(text: str) -> bool:
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`"


def like_to_regex(pattern: str) -> re.Pattern[str]:
    """SQL LIKE (% and _, backslash escapes) as a case-insensitive full-match regex."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z", re.I | re.S)


@dataclass
class SelectItem:
    expr: str
    name: str


def select_items(select_list: str) -> list[SelectItem]:
    """Expressions of a select list with the column name MySQL would give each."""
    items = []
    for part in split_top(select_list):
        if not part:
            raise parse_error(select_list)
        expr, name = part, part
        m = _ALIAS.match(part)
        if m and not _looks_whole(part):
            expr = m.group(1).strip()
            alias = m.group(2)
            name = unquote(alias) if is_quoted(alias) else alias
        items.append(SelectItem(expr, name))
    return items


def _looks_whole(part: str) -> bool:
    """An expression that contains a space but no alias (a quoted string, a call)."""
    p = part.strip()
    return is_quoted(p) or bool(_FUNC.match(p))


def sysvar(expr: str) -> tuple[str | None, str] | None:
    """(scope, name) of a ``@@[scope.]name`` expression."""
    m = _SYSVAR.match(expr.strip())
    if not m:
        return None
    return (m.group(1) or "").lower() or None, m.group(2).lower()


def uservar(expr: str) -> str | None:
    m = _USERVAR.match(expr.strip())
    if not m:
        return None
    return next(g for g in m.groups() if g is not None).lower()


def function_call(expr: str) -> tuple[str, list[str]] | None:
    m = _FUNC.match(expr.strip())
    if not m:
        return None
    args = split_top(m.group(2)) if m.group(2).strip() else []
    return m.group(1).lower(), args


def literal(expr: str) -> tuple[bool, object]:
    """(True, value) when ``expr`` is a number, a string or NULL."""
    e = expr.strip()
    if is_quoted(e) and e[0] != "`":
        return True, unquote(e)
    if _NUMBER.match(e):
        return True, int(e) if re.fullmatch(r"[+-]?\d+", e) else float(e)
    if e.upper() == "NULL":
        return True, None
    if e.upper() in ("TRUE", "FALSE"):
        return True, int(e.upper() == "TRUE")
    return False, None


def normalize(sql: str) -> str:
    """Strip comments, a trailing semicolon and surrounding space."""
    s = re.sub(r"/\*(?!!).*?\*/", " ", sql, flags=re.S)
    s = re.sub(r"/\*!\d*\s*(.*?)\*/", r"\1", s, flags=re.S)  # executable comments: keep the body
    s = s.strip()
    while s.endswith(";"):
        s = s[:-1].rstrip()
    return s
