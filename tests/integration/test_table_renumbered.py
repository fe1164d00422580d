"""A table the server numbers anew (FLUSH TABLES, or a table cache too small for the
tables in use) is the same TABLE_MAP but for its id: the decoder renumbers its earlier parse
instead of parsing and compiling decoders again, and every row still decodes right."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import RowsEvent
from binlake.binlog.table_map import TableMapEvent
from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.replica.position import Position
from binlake.replica.url import ServerURL
from streamcollect import collect  # tests/integration is on sys.path (rootdir-less test dirs)

ROUNDS = 4


@pytest.fixture(scope="module")
def written(mariadb) -> tuple[Path, Position]:
    """(the binlog file holding the rounds, where they start)"""
    mariadb.sql("DROP TABLE IF EXISTS renum",
                "CREATE TABLE renum (id INT PRIMARY KEY, v VARCHAR(20), tx TEXT) ENGINE=InnoDB")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        start = Position(*mariadb.binlog_end())
        for r in range(ROUNDS):
            cur.execute("INSERT INTO renum VALUES (%s, %s, %s), (%s, %s, %s)",
                        (2 * r, f"v{r}", "é" * 300 + str(r), 2 * r + 1, None, f"t{r}"))
            cur.execute("UPDATE renum SET v = %s WHERE id = %s", (f"u{r}", 2 * r))
            conn.commit()
            cur.execute("FLUSH TABLES renum")  # the next statement opens it under a new id
        cur.execute("DELETE FROM renum WHERE id = 1")
        conn.commit()
        cur.execute("FLUSH BINARY LOGS")
    conn.close()
    return mariadb.binlog_dir / start.file, start


def _expected() -> list[tuple]:
    expect = []
    for r in range(ROUNDS):
        a = {"id": 2 * r, "v": f"v{r}", "tx": "é" * 300 + str(r)}
        expect += [("insert", None, a),
                   ("insert", None, {"id": 2 * r + 1, "v": None, "tx": f"t{r}"}),
                   ("update", a, {**a, "v": f"u{r}"})]
    expect.append(("delete", {"id": 1, "v": None, "tx": "t0"}, None))
    return expect


def test_a_renumbered_table_shares_its_parse_and_decoders(written) -> None:
    binlog, _ = written
    dec = BinlogDecoder(file=binlog.name)
    maps = []
    for ev in read_events(binlog, decoder=dec):
        if isinstance(ev, TableMapEvent) and ev.table == "renum":
            maps.append(ev)
        if isinstance(ev, RowsEvent) and ev.table.table == "renum":
            assert ev.table_id == ev.table.table_id == maps[-1].table_id
    ids = [m.table_id for m in maps]
    assert len(set(ids)) >= ROUNDS, ids  # the server did number the table anew
    first = maps[0]
    for m in maps[1:]:
        assert m.columns is first.columns
        assert m.row_decoders is first.row_decoders


def test_the_rows_of_a_renumbered_table_decode_as_written(written) -> None:
    changes = [c for c in iter_changes(read_events(written[0])) if c.table == "renum"]
    assert [(c.op, c.before, c.after) for c in changes] == _expected()


def test_a_renumbered_table_streams_as_written(mariadb, written) -> None:
    got = collect(ServerURL.parse(mariadb.url), written[1],
                  lambda c, _bs: (c.op, c.before, c.after),
                  tables=lambda schema, table: table == "renum")
    assert got == _expected()
