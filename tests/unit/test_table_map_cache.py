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
    from binlake._util.recent import make_room

    cache = {i: str(i) for i in range(10)}
    make_room(cache, limit=11)  # room left: nothing goes
    assert list(cache) == list(range(10))
    make_room(cache, limit=10)
    assert list(cache) == list(range(5, 10))
    cache[10] = "10"
    cache[5] = "again"  # (a key set again keeps its place)
    make_room(cache, limit=6)
    assert cache == {8: "8", 9: "9", 10: "10"}


def test_renumbered_carries_every_field_but_the_id_and_place() -> None:
    """Every field of a TableMapEvent but its id and place survives `renumbered` (a field
    added later and forgotten there fails here)."""
    from dataclasses import fields

    from binlake.binlog.table_map import TableMapEvent

    values = {f.name: object() for f in fields(TableMapEvent)}
    tm = TableMapEvent(**values)
    new = {"table_id": object(), "header": object(), "file": object(), "offset": object(),
           "end": object()}
    moved = tm.renumbered(**new)
    for name, value in values.items():
        assert getattr(moved, name) is new.get(name, value), name


def _event(type_code: int, body: bytes, log_pos: int) -> bytes:
    import struct
    import zlib

    head = struct.pack("<IBIIIH", 0, type_code, 1, 19 + len(body) + 4, log_pos, 0)
    return head + body + struct.pack("<I", zlib.crc32(head + body))


def test_the_maps_of_a_server_that_renumbers_stay_bounded(corpus_dir) -> None:
    """A table numbered anew at every statement (20,000 ids) beside one that keeps its id:
    the decoder's `tables` stays bounded, and the steady table, mapped again before each of
    the other's maps (by the C scanner: its bytes are cached), is never the one dropped."""
    from binlake.binlog.constants import EventType as E
    from binlake.binlog.table_map import TableMapEvent
    from binlake._util.recent import TABLE_CACHE

    data = (corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
            ).read_bytes()
    fde_size = int.from_bytes(data[4 + 9:4 + 13], "little")
    out = bytearray(data[:4 + fde_size])
    steady = _body(1, 6, table=b"steady")
    for i in range(20_000):
        out += _event(E.TABLE_MAP, steady, len(out) + 19 + len(steady) + 4)
        churn = _body(1000 + i, 6)
        out += _event(E.TABLE_MAP, churn, len(out) + 19 + len(churn) + 4)
    dec = BinlogDecoder(file="f")
    dec.feed(bytes(out))
    most = seen = 0
    for ev in dec.events():
        if isinstance(ev, TableMapEvent) and ev.table == "t":
            seen += 1
            assert 1 in dec.tables and dec.tables[ev.table_id] is ev
            most = max(most, len(dec.tables))
    dec.close()
    assert seen == 20_000
    assert most == TABLE_CACHE  # (then it drops to half and grows again)
