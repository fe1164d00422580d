"""MariaDB's UUID, INET6 and INET4 values as text: the Python functions against texts a real
MariaDB 10.11 printed (SELECT CAST(col AS CHAR)), and the C decoder and C JSON writer
against the Python twin on addresses rich in zero groups (where '::' and the IPv4 forms
are decided)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.binlog.columns import fixedbin
from binlake.binlog.columns.rowcodec import (
    compile_c_row_decoder, compile_json_row_decoder, compile_python_row_decoder,
)
from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo
from binlake.errors import DecodeError

# (bytes as the binlog has them, the server's text); from a live 10.11 server
SERVER_TEXTS = {
    "uuid": [
        ("a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("6ccd780cbaba102695645b8c656024db", "6ccd780c-baba-1026-9564-5b8c656024db"),  # v1
        ("00000000000000000000000000000000", "00000000-0000-0000-0000-000000000000"),
        ("ffffffffffffffffffffffffffffffff", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    ],
    "inet6": [
        ("00000000000000000000000000000001", "::1"),
        ("00000000000000000000000000000000", "::"),
        ("20010db8000000000000ff0000428329", "2001:db8::ff00:42:8329"),
        ("00000000000000000000ffffc0000280", "::ffff:192.0.2.128"),
        ("fe800000000000000001000200030004", "fe80::1:2:3:4"),
        ("00010002000300040005000600070008", "1:2:3:4:5:6:7:8"),
        ("00010000000000000000000000000000", "1::"),
        ("00010000000000020000000000000003", "1:0:0:2::3"),
        ("00000000000000000000000001020304", "::1.2.3.4"),
        ("00000000000000000000ffff00000000", "::ffff:0.0.0.0"),
        ("00010000000200000003000000040000", "1::2:0:3:0:4:0"),
    ],
    "inet4": [("c0000201", "192.0.2.1"), ("00000000", "0.0.0.0"), ("ffffffff", "255.255.255.255"),
              ("0a000001", "10.0.0.1")],
}

needs_c = pytest.mark.skipif(compile_c_row_decoder([], []) is None,
                             reason="C extension not built (pure-Python install)")


def _column(kind: str) -> ColumnInfo:
    width = fixedbin.WIDTHS[kind]
    return ColumnInfo(index=0, type=T.STRING, binlog_type=T.STRING, meta=(T.STRING << 8) | width,
                      nullable=True, name="v", collation=63, plugin_type=kind)


def _row(value: bytes) -> bytes:
    """One row image of the single column: no NULL bit, the length byte, the bytes."""
    return b"\x00" + bytes([len(value)]) + value


def _all_paths(kind: str, value: bytes) -> list[object]:
    """The value through every decoder: Python, C values, C JSON image (as text)."""
    col, buf = [_column(kind)], _row(value)
    out: list[object] = [compile_python_row_decoder(col, [True])(buf, 0)[0][0]]
    c = compile_c_row_decoder(col, [True])
    if c is not None:
        out.append(c(buf, 0)[0][0])
        j = compile_json_row_decoder(col, ["v"], [True])
        if j is not None:
            images: list[bytes] = []
            j.json_many(buf, 0, len(buf), images)
            out.append(json.loads(images[0])["v"])
    return out


@pytest.mark.parametrize("kind", sorted(SERVER_TEXTS))
def test_texts_are_the_servers(kind: str) -> None:
    for hexed, text in SERVER_TEXTS[kind]:
        raw = bytes.fromhex(hexed)
        assert fixedbin.text_function(kind)(raw) == text
        assert set(_all_paths(kind, raw)) == {text}
        # the binlog may leave out trailing zero bytes, as for any BINARY(n)
        assert set(_all_paths(kind, raw.rstrip(b"\0"))) == {text}


_GROUP = st.sampled_from([0, 0, 0, 1, 0xFFFF, 0xABC, 0x1000]) | st.integers(0, 0xFFFF)


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.lists(_GROUP, min_size=8, max_size=8))
def test_c_inet6_text_is_the_python_twins(groups: list[int]) -> None:
    raw = b"".join(g.to_bytes(2, "big") for g in groups)
    assert set(_all_paths("inet6", raw)) == {fixedbin.inet6_text(raw)}


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=16, max_size=16), st.binary(min_size=4, max_size=4))
def test_c_uuid_and_inet4_text_are_the_python_twins(u: bytes, v4: bytes) -> None:
    assert set(_all_paths("uuid", u)) == {fixedbin.uuid_text(u)}
    assert set(_all_paths("inet4", v4)) == {fixedbin.inet4_text(v4)}


def test_a_value_longer_than_its_type_is_refused() -> None:
    col, buf = [_column("inet4")], _row(b"\x01\x02\x03\x04\x05")
    with pytest.raises(DecodeError, match="INET4 value of 5 bytes"):
        compile_python_row_decoder(col, [True])(buf, 0)
    c = compile_c_row_decoder(col, [True])
    if c is not None:
        with pytest.raises(DecodeError, match="INET4 value of 5 bytes"):
            c(buf, 0)
        j = compile_json_row_decoder(col, ["v"], [True])
        with pytest.raises(DecodeError, match="INET4 value of 5 bytes"):
            j.json_many(buf, 0, len(buf), [])


def test_without_the_type_the_column_stays_binary() -> None:
    """No schema history (the TABLE_MAP says BINARY(16) even with FULL metadata): bytes."""
    col = [ColumnInfo(index=0, type=T.STRING, binlog_type=T.STRING, meta=(T.STRING << 8) | 16,
                      nullable=True, collation=63)]
    raw = bytes.fromhex("00000000000000000000000000000001")
    assert compile_python_row_decoder(col, [True])(_row(raw), 0)[0][0] == raw
    c = compile_c_row_decoder(col, [True])
    if c is not None:
        assert c(_row(raw), 0)[0][0] == raw
