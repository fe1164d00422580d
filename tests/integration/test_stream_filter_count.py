"""A table-filtered stream counts the rows it leaves out without decoding them, so its
resume points are the same as an unfiltered stream's, and a resume inside a mixed
transaction skips exactly what was handed out."""
from __future__ import annotations

from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from streamcollect import collect  # tests/integration is on sys.path (rootdir-less test dirs)


def _collect(url: ServerURL, start: Position, tables=None, limit: int | None = None):
    return collect(url, start, lambda rec, bs: (rec.table, rec.op, rec.after or rec.before,
                                                bs.position), tables=tables, limit=limit)


def test_filtered_rows_are_counted_in_resume_points(mariadb) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS keep_me (id INT PRIMARY KEY, s TEXT)",
                "CREATE TABLE IF NOT EXISTS skip_me (id INT PRIMARY KEY, s TEXT)",
                "DELETE FROM keep_me", "DELETE FROM skip_me")
    start = Position(*mariadb.binlog_end())
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for i in range(6):  # one transaction, the tables' rows events interleaved
                cur.executemany("INSERT INTO skip_me VALUES (%s, %s)",
                                [(i * 100 + k, "x" * 3000) for k in range(7)])
                cur.execute("INSERT INTO keep_me VALUES (%s, %s)", (i, "kept"))
                cur.execute("UPDATE skip_me SET s = 'y' WHERE id = %s", (i * 100,))
        conn.commit()
    finally:
        conn.close()
    url = ServerURL.parse(mariadb.url)
    keep = lambda s, t: t == "keep_me"  # noqa: E731
    every = _collect(url, start)
    kept = _collect(url, start, tables=keep)
    assert [r[2]["id"] for r in kept] == list(range(6))
    # Each kept record's resume point counts the left-out rows before it, as unfiltered.
    unfiltered = {(r[0], r[2]["id"]): r[3] for r in every if r[0] == "keep_me"}
    for table, _, image, pos in kept:
        assert pos == unfiltered[(table, image["id"])]
        assert pos.rows_done > 0
    # Resume inside the transaction from the 3rd kept record: the rest, once each.
    mid = kept[2][3]
    rest = _collect(url, mid, tables=keep)
    assert [r[2]["id"] for r in rest] == [3, 4, 5]


def test_stop_at_the_end_of_a_fresh_files_header_events(mariadb) -> None:
    """SHOW MASTER STATUS right after a rotation points past the new file's FDE and GTID
    list: a stream asked to stop there reaches it instead of failing at the end."""
    mariadb.sql("CREATE TABLE IF NOT EXISTS fresh (id INT PRIMARY KEY)", "DELETE FROM fresh")
    start = Position(*mariadb.binlog_end())
    mariadb.sql("INSERT INTO fresh VALUES (1), (2)")
    mariadb.sql("FLUSH BINARY LOGS", database=None)
    stop = mariadb.binlog_end()
    assert stop[1] > 4  # the new file already holds its header events
    bs = BinlogStream(ServerURL.parse(mariadb.url),
                      StreamOptions(start=start, until_end=True, stop_at=stop,
                                    tables=lambda s, t: t == "fresh"))
    try:
        got = [rec.after["id"] for rec in bs.changes()]
    finally:
        bs.close()
    assert got == [1, 2]
    assert (bs.position.file, bs.position.pos) == stop
