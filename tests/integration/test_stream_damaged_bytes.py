"""A byte damaged between the primary and the replica fails the live stream at its event,
naming its file and offset, the CRC32 that did not match and what to do: nothing of that
event or after it is handed out, and the stream's position stays before it (a restart reads
it again)."""
from __future__ import annotations

import pytest

from binlake.errors import DecodeError
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from tcpproxy import TcpProxy  # tests/integration is on sys.path (rootdir-less test dirs)


@pytest.mark.parametrize("tables", [None, "ra_damage", "ra_other"],
                         ids=["all-tables", "its-table-kept", "its-table-left-out"])
def test_a_byte_damaged_on_the_way_fails_the_stream_at_its_event(mariadb, tables) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS ra_damage (id INT PRIMARY KEY, s LONGTEXT)",
                "DELETE FROM ra_damage")
    start = Position(*mariadb.binlog_end())
    mariadb.sql("INSERT INTO ra_damage VALUES (1, 'fine')")
    mariadb.sql(f"INSERT INTO ra_damage VALUES (2, '{'Z' * 5000}')")
    mariadb.sql("INSERT INTO ra_damage VALUES (3, 'after')")
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    proxy.corrupt(b"Z" * 16, b"Z" * 15 + b"Y")
    base = ServerURL.parse(mariadb.url)
    url = ServerURL("127.0.0.1", proxy.port, base.user, base.password, {"ssl_mode": "DISABLED"})
    keep = None if tables is None else (lambda s, t: t == tables)
    bs = BinlogStream(url, StreamOptions(start=start, until_end=True, tables=keep))
    got, positions = [], []
    try:
        with pytest.raises(DecodeError) as info:
            for rec in bs.changes():
                got.append(rec.after["id"])
                positions.append(bs.position)
    finally:
        bs.close()
        proxy.close()
    # nothing of the damaged event, nothing after it (a left-out table's event is checked
    # as it is passed over: its rows count in the stream's position)
    assert got == ([] if tables == "ra_other" else [1])
    message = str(info.value)
    writes = [row[1] for row in mariadb.sql(f"SHOW BINLOG EVENTS IN '{start.file}' FROM {start.pos}",
                                             database=None) if row[2].startswith("Write_rows")]
    assert len(writes) == 3
    assert f"{start.file} offset {writes[1]} WRITE_ROWS" in message  # the damaged event
    assert "CRC32 mismatch" in message and "damaged on the way" in message
    assert bs.reconnects == 0  # a damaged event is not a broken link: no silent re-read
    # The stream stands after the first transaction, before the damaged one: a restart
    # from there over an undamaged link hands out the rest, once.
    assert bs.position.file == start.file and bs.position.pos > start.pos
    if positions:
        assert bs.position.pos > positions[-1].pos
    again = BinlogStream(base, StreamOptions(start=bs.position, until_end=True, tables=keep))
    try:
        assert [rec.after["id"] for rec in again.changes()] == ([] if tables == "ra_other"
                                                                  else [2, 3])
        assert again.position.pos > bs.position.pos  # it went past the event this time
    finally:
        again.close()
