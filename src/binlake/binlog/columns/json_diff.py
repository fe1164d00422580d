"""PARTIAL_UPDATE_ROWS JSON diffs (MySQL 8.0 binlog_row_value_options=PARTIAL_JSON).

With PARTIAL_JSON, an UPDATE of the form `col = JSON_SET/JSON_REPLACE/JSON_REMOVE(col, ...)`
logs, for that JSON column in the after image, a list of edits instead of the document:

    diff-vector ::= length(u32 LE) diff*          (length counts the diff bytes that follow)
    diff        ::= op(u8) path-length(packed int) path [value-length(packed int) value]
    op          ::= 0 REPLACE | 1 INSERT | 2 REMOVE  (REMOVE has no value)

`path` is MySQL's printed JSON path ("$.a[3]", '$."key with space"', "$[last-1]") and `value`
is a binary JSON document. The u32 length doubles as the JSON column's usual 4-byte length
prefix, so a column reader can skip a partial value exactly like a full one.

Applying diffs follows MySQL's own replica code (apply_json_diff in sql/json_diff.cc): paths
are followed exactly (no auto-wrapping), REPLACE needs the target to exist, INSERT needs the
parent to exist and an object key to be new (array positions past the end append), REMOVE
needs the target to exist. Anything else means the before image is not the document the
source server edited, and binlake refuses to guess: DecodeError naming the path.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from binlake._util.lenenc import read_lenenc
from binlake.binlog.columns.json_binary import decode_json_binary
from binlake.errors import DecodeError

__all__ = ["JsonDiff", "parse_json_diffs", "parse_json_path", "apply_json_diffs"]

JsonDiffOp = Literal["replace", "insert", "remove"]
_OPS: tuple[JsonDiffOp, ...] = ("replace", "insert", "remove")

PathLeg = str | int


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logged edit: `value` is the decoded JSON to write (None for 'remove').

    Note that for 'replace'/'insert' a value of None means JSON null.
    """

    op: JsonDiffOp
    path: str
    value: object = None


# --- wire format -------------------------------------------------------------------------

def _length_error(kind: str, pos: int, detail: int, left: int) -> DecodeError:
    if kind == "prefix":
        return DecodeError(f"JSON diff has an invalid length byte 0x{detail:02x}")
    return DecodeError("JSON diff is truncated inside a length")


def _packed_int(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """MySQL length-encoded integer (net_field_length), bounded by `end`; the NULL marker
    (0xFB) is invalid here."""
    value, after = read_lenenc(buf if end == len(buf) else memoryview(buf)[:end], pos,
                               _length_error)
    if value is None:
        raise DecodeError("JSON diff has an invalid length byte 0xfb")
    return value, after


def parse_json_diffs(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[list[JsonDiff], int]:
    """Read one diff vector (u32 length + diffs) at `pos`; return the diffs and the end position.

    An empty vector (length 0) is valid: MySQL logs it when the statement left the column
    unchanged, and it means "after image = before image".
    """
    data = buf if type(buf) is bytes else bytes(buf)
    if pos < 0 or pos + 4 > len(data):
        raise DecodeError("JSON diff vector is truncated before its length")
    length = int.from_bytes(data[pos:pos + 4], "little")
    p = pos + 4
    end = p + length
    if end > len(data):
        raise DecodeError(
            f"JSON diff vector claims {length} bytes but only {len(data) - p} remain"
        )
    diffs: list[JsonDiff] = []
    while p < end:
        code = data[p]
        if code >= len(_OPS):
            raise DecodeError(f"JSON diff has unknown operation {code}")
        op = _OPS[code]
        path_len, p = _packed_int(data, p + 1, end)
        if path_len > end - p:
            raise DecodeError(f"JSON diff path of {path_len} bytes overruns the diff vector")
        try:
            path = data[p:p + path_len].decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("JSON diff path is not valid UTF-8") from None
        p += path_len
        parse_json_path(path)  # validate now: a corrupt path should fail at read time
        value: object = None
        if op != "remove":
            value_len, p = _packed_int(data, p, end)
            if value_len > end - p:
                raise DecodeError(
                    f"JSON diff value of {value_len} bytes for {path!r} overruns the diff vector"
                )
            if value_len == 0:
                raise DecodeError(f"JSON diff value for {path!r} is empty")
            value = decode_json_binary(data[p:p + value_len])
            p += value_len
        diffs.append(JsonDiff(op, path, value))
    return diffs, end


# --- paths -------------------------------------------------------------------------------

_WS = " \t\n\r\f\v"
_MEMBER_END = _WS + "[.*"


def parse_json_path(path: str) -> list[PathLeg]:
    """Parse a MySQL JSON path without wildcards/ranges into legs.

    Legs are str (object member) or int (array cell). A non-negative int counts from the
    start; a negative int counts from the end Python-style: `[last]` is -1, `[last-N]` is
    -(N+1). Wildcards, `**` and `[M to N]` ranges never appear in logged diffs and raise
    DecodeError, as does any syntax error.
    """
    n = len(path)
    i = 0

    def fail(why: str) -> DecodeError:
        return DecodeError(f"invalid JSON path {path!r}: {why}")

    while i < n and path[i] in _WS:
        i += 1
    if i >= n or path[i] != "$":
        raise fail("must start with '$'")
    i += 1
    legs: list[PathLeg] = []
    while True:
        while i < n and path[i] in _WS:
            i += 1
        if i >= n:
            return legs
        ch = path[i]
        if ch == ".":
            i += 1
            while i < n and path[i] in _WS:
                i += 1
            if i >= n:
                raise fail("member name missing after '.'")
            if path[i] == "*":
                raise fail("wildcards are not allowed")
            if path[i] == '"':
                j = i + 1
                while j < n and path[j] != '"':
                    j += 2 if path[j] == "\\" else 1
                if j >= n:
                    raise fail("unterminated quoted member name")
                raw = path[i:j + 1]
                i = j + 1
            else:
                j = i
                while j < n and path[j] not in _MEMBER_END:
                    j += 1
                if j == i:
                    raise fail("empty unquoted member name")
                # MySQL unescapes unquoted names as JSON string content too. It also demands
                # an ECMAScript identifier; we do not re-check that (MySQL wrote the path).
                raw = '"' + path[i:j] + '"'
                i = j
            try:
                name = json.loads(raw)
            except ValueError:
                raise fail(f"bad member name {raw}") from None
            if not isinstance(name, str):
                raise fail(f"bad member name {raw}")
            legs.append(name)
        elif ch == "[":
            i += 1
            while i < n and path[i] in _WS:
                i += 1
            from_end = path.startswith("last", i)
            if from_end:
                i += 4
                while i < n and path[i] in _WS:
                    i += 1
                offset = 0
                if i < n and path[i] == "-":
                    i += 1
                    while i < n and path[i] in _WS:
                        i += 1
                    offset, i = _digits(path, i, fail)
                index = -(offset + 1)
            else:
                if i < n and path[i] == "*":
                    raise fail("wildcards are not allowed")
                index, i = _digits(path, i, fail)
            while i < n and path[i] in _WS:
                i += 1
            if i >= n or path[i] != "]":
                raise fail("expected ']' (ranges are not allowed)")
            i += 1
            legs.append(index)
        elif ch == "*":
            raise fail("'**' is not allowed")
        else:
            raise fail(f"unexpected character {ch!r} at {i}")


def _digits(path: str, i: int, fail: Callable[[str], DecodeError]) -> tuple[int, int]:
    j = i
    while j < len(path) and "0" <= path[j] <= "9":
        j += 1
    if j == i:
        raise fail("array index expected")
    return int(path[i:j]), j


# --- applying ----------------------------------------------------------------------------

def _mysql_key(key: str) -> tuple[int, bytes]:
    """MySQL orders object keys by UTF-8 length, then bytes (Json_key_comparator)."""
    raw = key.encode("utf-8")
    return len(raw), raw


def _cell(leg: int, size: int) -> tuple[int, bool]:
    """(position, within bounds) of an array leg, as MySQL's Json_array_index computes it."""
    if leg >= 0:
        return min(leg, size), leg < size
    back = -leg - 1  # [last-back]
    if back < size:
        return size - back - 1, True
    return 0, False


def apply_json_diffs(doc: object, diffs: list[JsonDiff]) -> object:
    """Apply `diffs` in order to `doc`, returning the new document; `doc` is left untouched.

    Only the containers on each edited path are copied; untouched subtrees are shared
    between the input and the result (treat decoded documents as immutable). Inserted keys
    go to the position MySQL's object order gives them, so the result matches what a
    full after image would decode to. A missing path, an existing key for 'insert', or
    a path through a scalar raises DecodeError naming the path.
    """
    if not diffs:
        return doc
    fresh: set[int] = set()  # ids of containers already copied during this call
    keepalive: list[object] = []  # fresh copies stay alive, so their ids stay unique

    def own(container: Any) -> Any:
        if id(container) in fresh:
            return container
        copy = dict(container) if isinstance(container, dict) else list(container)
        fresh.add(id(copy))
        keepalive.append(copy)
        return copy

    root_holder: list[Any] = [doc]
    for diff in diffs:
        legs = parse_json_path(diff.path)
        if not legs:
            raise DecodeError(f"JSON diff {diff.op} on the root path {diff.path!r} is not allowed")

        def missing(why: str) -> DecodeError:
            return DecodeError(
                f"JSON diff {diff.op} {diff.path!r} does not apply to the before image: {why}",
                hint="the before image is not the document the server edited",
            )

        # Walk to the parent of the last leg, copying each container on the way.
        holder: Any = root_holder
        slot: str | int = 0
        current: Any = root_holder[0]
        for depth, leg in enumerate(legs[:-1]):
            if isinstance(current, dict) and isinstance(leg, str):
                if leg not in current:
                    raise missing(f"no member {leg!r} at leg {depth + 1}")
                child_slot: str | int = leg
            elif isinstance(current, list) and isinstance(leg, int):
                pos, inside = _cell(leg, len(current))
                if not inside:
                    raise missing(f"array index {leg} out of range at leg {depth + 1}")
                child_slot = pos
            else:
                raise missing(f"leg {depth + 1} does not match a {type(current).__name__}")
            current = own(current)
            holder[slot] = current
            holder, slot = current, child_slot
            current = current[child_slot]

        last = legs[-1]
        if isinstance(current, dict) and isinstance(last, str):
            exists = last in current
            if diff.op == "insert":
                if exists:
                    raise missing(f"member {last!r} already exists")
                items = list(current.items())
                items.append((last, diff.value))
                items.sort(key=lambda kv: _mysql_key(kv[0]))
                new: Any = dict(items)
                fresh.add(id(new))
                keepalive.append(new)
            else:
                if not exists:
                    raise missing(f"no member {last!r}")
                new = own(current)
                if diff.op == "replace":
                    new[last] = diff.value
                else:
                    del new[last]
        elif isinstance(current, list) and isinstance(last, int):
            pos, inside = _cell(last, len(current))
            new = own(current)
            if diff.op == "insert":
                new.insert(pos, diff.value)
            elif not inside:
                raise missing(f"array index {last} out of range (size {len(current)})")
            elif diff.op == "replace":
                new[pos] = diff.value
            else:
                del new[pos]
        else:
            raise missing(f"last leg does not match a {type(current).__name__}")
        holder[slot] = new
    return root_holder[0]
