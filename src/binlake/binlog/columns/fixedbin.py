"""MariaDB's fixed-binary data types UUID, INET6 and INET4 as the server prints them.

The binlog carries these columns as BINARY(16) or BINARY(4) (MYSQL_TYPE_STRING, binary
collation), even with binlog_row_metadata=FULL: only the schema history knows the type
(`ColumnInfo.plugin_type`). The bytes are the value in its text order: MariaDB logs a UUID
in its in-memory form, not the segment-swapped form some versions store in the record, and
INET6/INET4 in network order. Like any BINARY(n), a value may arrive without its trailing
zero bytes. The texts are those of `SELECT CAST(col AS CHAR)`; the C decoder has a twin
(speedups/values.h, fbt_text) tested against these functions.
"""
from __future__ import annotations

from typing import Callable

from ...errors import DecodeError

WIDTHS = {"uuid": 16, "inet6": 16, "inet4": 4}
"""Bytes of each type's binlog value."""


def uuid_text(b: bytes) -> str:
    """'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11': lower-case hex in 8-4-4-4-12 groups."""
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def inet4_text(b: bytes) -> str:
    return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"


def inet6_text(b: bytes) -> str:
    """MariaDB's INET6 text: lower-case hex groups without leading zeros; the first longest
    run of zero groups, even a single one, becomes '::'; an address whose first six groups
    are zero (IPv4-compatible) or five zeros and ffff (IPv4-mapped) ends in dotted IPv4."""
    words = [b[i] << 8 | b[i + 1] for i in range(0, 16, 2)]
    gap_pos, gap_len, run_pos = -1, 0, -1
    for i, w in enumerate(words + [1]):  # the sentinel closes a run at the end
        if w == 0:
            if run_pos < 0:
                run_pos = i
        elif run_pos >= 0:
            if i - run_pos > gap_len:
                gap_pos, gap_len = run_pos, i - run_pos
            run_pos = -1
    out = []
    i = 0
    while i < 8:
        if i == gap_pos:
            out.append("::" if i == 0 else ":")
            i += gap_len
            continue
        if i == 6 and gap_pos == 0 and (gap_len == 6 or (gap_len == 5 and words[5] == 0xFFFF)):
            out.append(inet4_text(b[12:]))
            break
        out.append(f"{words[i]:x}" + (":" if i < 7 else ""))
        i += 1
    return "".join(out)


_TEXT = {"uuid": uuid_text, "inet6": inet6_text, "inet4": inet4_text}


def text_function(kind: str) -> Callable[[bytes], str]:
    """`binlog bytes -> text` for one type: restores trailing zero bytes, refuses a value
    longer than the type (DecodeError)."""
    width, fmt = WIDTHS[kind], _TEXT[kind]
    name = kind.upper()

    def text(b: bytes) -> str:
        if len(b) != width:
            if len(b) > width:
                raise DecodeError(f"{name} value of {len(b)} bytes; the type has {width}")
            b = b.ljust(width, b"\0")
        return fmt(b)

    return text
