"""TABLE_MAP bodies that differ in their table id alone share one parse (the decoder's
shape cache), for both widths of the id; any other difference is a parse of its own."""
from __future__ import annotations

import pytest

from binlake.binlog.constants import ColumnType as T
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.header import make_header


def _body(table_id: int, id_len: int, table: bytes = b"t", varchar_len: int = 40) -> bytes:
    """A TABLE_MAP body: db.<table> (INT NOT NULL, VARCHAR(varchar_len) NULL)."""
    return (table_id.to_bytes(id_len, "little") + b"\x01\x00"
            + b"\x02db\x00" + bytes([len(table)]) + table + b"\x00"
            + b"\x02" + bytes([T.LONG, T.VARCHAR])
            + b"\x02" + varchar_len.to_bytes(2, "little") + b"\x02")


def _base(offset: int) -> dict:
    return {"header": make_header(0, 19, 1, 19 + 30, offset + 49, 0), "file": "f",
            "offset": offset, "end": offset + 49}


@pytest.mark.parametrize("post_header_len, id_len", [(8, 6), (6, 4)])
def test_a_new_table_id_alone_is_the_earlier_parse_renumbered(post_header_len: int,
                                                              id_len: int) -> None:
    dec = BinlogDecoder(file="f")
    first = dec._table_map(_body(17, id_len), _base(100), post_header_len)
    again = dec._table_map(_body(2**(8 * id_len) - 2, id_len), _base(300), post_header_len)
    assert (first.table_id, again.table_id) == (17, 2**(8 * id_len) - 2)
    assert (again.offset, again.end, again.header.log_pos) == (300, 349, 349)
    assert again.columns is first.columns and again.row_decoders is first.row_decoders
    assert (again.schema, again.table, [c.type for c in again.columns]) == (
        "db", "t", [T.LONG, T.VARCHAR])
    assert [c.nullable for c in again.columns] == [False, True]


def test_any_other_difference_is_a_parse_of_its_own() -> None:
    dec = BinlogDecoder(file="f")
    first = dec._table_map(_body(17, 6), _base(100), 8)
    for body in (_body(18, 6, table=b"u"), _body(18, 6, varchar_len=41)):
        other = dec._table_map(body, _base(300), 8)
        assert other.columns is not first.columns
        assert other.row_decoders is not first.row_decoders
    assert dec._table_map(_body(19, 6, varchar_len=41), _base(500), 8).columns[1].meta == 41


def test_a_full_cache_keeps_its_newer_half() -> None:
    from binlake.recent import make_room

    cache = {i: str(i) for i in range(10)}
    make_room(cache, limit=11)  # room left: nothing goes
    assert list(cache) == list(range(10))
    make_room(cache, limit=10)
    assert list(cache) == list(range(5, 10))
    cache[10] = "10"
    cache[5] = "again"  # (a key set again keeps its place)
    make_room(cache, limit=6)
    assert cache == {8: "8", 9: "9", 10: "10"}
