"""Packed text rows split into Arrow column buffers: the C core's `text_columns` and its
Python twin `results.split_text_rows` give the same buffers, batch limits and errors."""
from __future__ import annotations

from typing import Any

import pytest

from binlake.errors import ProtocolError
from binlake.protocol.results import build_text_row, pack_text_row, split_text_rows
from binlake._speedups.native import c_module

needs_c = pytest.mark.skipif(c_module is None or not hasattr(c_module, "text_columns"),
                             reason="the C extension is not built")

ROWS: list[tuple[Any, ...]] = [
    (1, "a", None, b""),
    (None, None, None, None),
    (-7, "é" * 200, b"\x00\xff" * 150, "x" * 70_000),  # 1-, 2- and 3-byte length prefixes
    (2 ** 63, "", 0, "tail"),
]


def packed(rows: list[tuple[Any, ...]]) -> bytearray:
    out = bytearray()
    for r in rows:
        pack_text_row(out, build_text_row(r))
    return out


def expected(rows: list[tuple[Any, ...]], col: int) -> list[bytes | None]:
    def raw(v: Any) -> bytes | None:
        if v is None:
            return None
        if isinstance(v, bytes):
            return v
        return (v if isinstance(v, str) else str(v)).encode("utf-8")
    return [raw(r[col]) for r in rows]


def values(buffers: tuple[Any, ...], n: int) -> list[bytes | None]:
    validity, offsets, data, nulls = buffers
    offs = [int.from_bytes(offsets[i * 4:i * 4 + 4], "little", signed=True) for i in range(n + 1)]
    out: list[bytes | None] = []
    for i in range(n):
        if validity is not None and not validity[i >> 3] >> (i & 7) & 1:
            out.append(None)
        else:
            out.append(bytes(data[offs[i]:offs[i + 1]]))
    assert nulls == out.count(None)
    return out


def test_python_twin_splits_every_length_prefix() -> None:
    buf = packed(ROWS)
    end, n, cols = split_text_rows(buf, 0, 4, 100, 1 << 30)
    assert (end, n) == (len(buf), 4)
    for c in range(4):
        assert values(cols[c], n) == expected(ROWS, c)
    assert cols[0][0] is not None and cols[1][0] is not None


@needs_c
@pytest.mark.parametrize("max_rows,max_bytes", [(100, 1 << 30), (1, 1 << 30), (3, 1 << 30),
                                                (100, 1), (100, 100)])
def test_c_equals_python(max_rows: int, max_bytes: int) -> None:
    buf = packed(ROWS)
    pos = 0
    while pos < len(buf):
        want = split_text_rows(buf, pos, 4, max_rows, max_bytes)
        got = c_module.text_columns(buf, pos, 4, max_rows, max_bytes)
        assert got[0] == want[0] and got[1] == want[1]
        assert [tuple(c) for c in got[2]] == [tuple(c) for c in want[2]]
        assert got[1] >= 1
        pos = got[0]


def test_no_null_column_has_no_bitmap_and_empty_input_no_rows() -> None:
    buf = packed([(1, "x"), (2, "y")])
    _, n, cols = split_text_rows(buf, 0, 2, 10, 1 << 20)
    assert n == 2 and cols[0][0] is None and cols[0][3] == 0
    assert split_text_rows(b"", 0, 2, 10, 1 << 20)[:2] == (0, 0)


BAD = [
    ("fewer values", lambda: packed([(1,)])),
    ("bytes after", lambda: packed([(1, 2, 3)])),
    ("cut length", lambda: bytearray(b"\x05\x00")),
    ("past the rows", lambda: bytearray(b"\x09\x00\x00\x00\x011")),
    ("value past the row", lambda: bytearray(b"\x03\x00\x00\x00\x05ab")),
    ("bad marker", lambda: bytearray(b"\x02\x00\x00\x00\xff\x00")),
]


@pytest.mark.parametrize("name,make", BAD, ids=[b[0] for b in BAD])
def test_malformed_rows_raise_protocol_error(name: str, make: Any) -> None:
    buf = make()
    with pytest.raises(ProtocolError):
        split_text_rows(buf, 0, 2, 10, 1 << 20)
    if c_module is not None and hasattr(c_module, "text_columns"):
        with pytest.raises(ProtocolError, match="offset 0"):
            c_module.text_columns(buf, 0, 2, 10, 1 << 20)
