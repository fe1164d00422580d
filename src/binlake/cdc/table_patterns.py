"""`--tables` patterns: 'db.t1,db2.*' — shell patterns over DATABASE.TABLE names.

A pattern that can match no table name is a mistake (a bare database name, an unclosed
'[', an empty entry, one dot too many): it is refused with the pattern and the fix, never
taken as "no table", which would read nothing and exit 0.
"""
from __future__ import annotations

import fnmatch
import re

from ..errors import ConfigError


def _parts(pattern: str) -> list[str] | None:
    """The pattern split at its dots outside [...] sets; None if a '[' is never closed."""
    parts, i, start, n = [], 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "[":
            # fnmatch's rule: a set may start with '!' and then ']' as a member.
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close < 0:
                return None
            i = close + 1
            continue
        if c == ".":
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


def _never_matches(part: str) -> bool:
    """A shell pattern no string matches (a set with only reversed ranges, '[z-a]')."""
    return "(?!)" in fnmatch.translate(part)


def parse_patterns(spec: str, option: str = "--tables") -> list[str]:
    """The patterns of a --tables value, each checked; ConfigError names the bad one."""
    shown = f"{option} {spec!r}"
    patterns = [p.strip() for p in spec.split(",")]
    if not any(patterns):
        raise ConfigError(f"{shown} names no table",
                          hint="give DATABASE.TABLE patterns, e.g. 'shop.orders,crm.*'")
    for p in patterns:
        if not p:
            raise ConfigError(f"{shown} has an empty entry between its commas",
                              hint="remove the extra comma, e.g. 'shop.orders,crm.*'")
        parts = _parts(p)
        if parts is None:
            raise ConfigError(f"{shown}: pattern {p!r} opens a '[' set that is not closed",
                              hint="close it, e.g. 'shop.t[0-9]', or write '[[]' for a '['")
        if len(parts) == 1:
            raise ConfigError(f"{shown}: pattern {p!r} has no dot, so it matches no "
                              "DATABASE.TABLE name",
                              hint=f"write '{p}.*' for every table of database {p!r}, or "
                                   "DATABASE.TABLE")
        if len(parts) > 2:
            raise ConfigError(f"{shown}: pattern {p!r} has {len(parts) - 1} dots; a pattern is "
                              "DATABASE.TABLE", hint="use one dot, e.g. 'shop.orders' or 'shop.*'")
        db, table = parts
        if not db or not table or _never_matches(db) or _never_matches(table):
            raise ConfigError(f"{shown}: pattern {p!r} can match no table "
                              f"({'an empty' if not db or not table else 'an impossible'} "
                              f"{'database' if not db or _never_matches(db) else 'table'} part)",
                              hint="write DATABASE.TABLE, e.g. 'shop.orders' or 'shop.*'")
    return patterns


def compile_patterns(patterns: list[str]) -> "re.Pattern[str]":
    """One regular expression for 'db.table' names matching any of the patterns."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
