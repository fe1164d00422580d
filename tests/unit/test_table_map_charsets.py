"""COLUMN_CHARSET optional metadata: MySQL lists the character columns only; Dolt lists every
column (0 for the others). Both decode; an entry count that fits neither is an error."""
from __future__ import annotations

import pytest

from binlake.binlog.constants import ColumnType as T
from binlake.binlog.header import make_header
from binlake.binlog.table_map import OM_COLUMN_CHARSET, OM_COLUMN_NAME, decode_table_map
from binlake.errors import BinlakeError


def _body(charsets: list[int]) -> bytes:
    """db.t (id INT, name VARCHAR(40), n BIGINT, note VARCHAR(40)) with FULL-style metadata."""
    names = b"".join(bytes([len(n)]) + n for n in (b"id", b"name", b"n", b"note"))
    field = bytes(charsets)  # (each id < 251: one byte packed)
    meta = (bytes([OM_COLUMN_CHARSET, len(field)]) + field
            + bytes([OM_COLUMN_NAME, len(names)]) + names)
    return ((17).to_bytes(6, "little") + b"\x01\x00"
            + b"\x02db\x00" + b"\x01t\x00"
            + b"\x04" + bytes([T.LONG, T.VARCHAR, T.LONGLONG, T.VARCHAR])
            + b"\x04" + (160).to_bytes(2, "little") + (160).to_bytes(2, "little")
            + b"\x0f" + meta)


def _decode(body: bytes):
    base = {"header": make_header(0, 19, 1, 19 + len(body), 100 + 19 + len(body), 0),
            "file": "f", "offset": 100, "end": 100 + 19 + len(body)}
    return decode_table_map(memoryview(body), base, 8, mariadb=False)


def test_one_entry_per_character_column_as_mysql_writes() -> None:
    tm = _decode(_body([45, 63]))
    assert [c.collation for c in tm.columns] == [None, 45, None, 63]


def test_one_entry_per_column_as_dolt_writes_matches_by_index() -> None:
    tm = _decode(_body([0, 45, 0, 46]))
    assert [c.name for c in tm.columns] == ["id", "name", "n", "note"]
    assert [c.collation for c in tm.columns] == [None, 45, None, 46]


def test_too_few_entries_is_an_error_naming_the_table() -> None:
    with pytest.raises(BinlakeError, match=r"db\.t: column charset metadata has 1 entries for 2"):
        _decode(_body([45]))
