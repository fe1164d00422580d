"""`BinlogStream.batches()` hands out the records of `changes()`, a rows event (or statement)
at a time: the same records in the same order, and after each list a position that counts
all of it, so a resume from there goes on with the next record, filtered or not."""
from __future__ import annotations

from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL


def _status(server) -> tuple[str, int]:
    return server.binlog_end()


def _key(rec) -> tuple:
    return rec.table, rec.op, tuple(sorted((rec.after or rec.before or {}).items()))


def _records(url: ServerURL, start: Position, tables=None) -> list[tuple]:
    bs = BinlogStream(url, StreamOptions(start=start, until_end=True, tables=tables))
    try:
        return [(_key(rec), bs.position) for rec in bs.changes()]
    finally:
        bs.close()


def _batches(url: ServerURL, start: Position, tables=None, limit: int | None = None):
    bs = BinlogStream(url, StreamOptions(start=start, until_end=True, tables=tables))
    out = []
    try:
        for batch in bs.batches():
            assert batch and isinstance(batch, list)
            out.append(([_key(rec) for rec in batch], bs.position))
            if limit is not None and len(out) == limit:
                break
    finally:
        bs.close()
    return out


def test_batches_are_the_records_of_changes_with_the_same_resume_points(mariadb) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS b_keep (id INT PRIMARY KEY, s TEXT)",
                "CREATE TABLE IF NOT EXISTS b_skip (id INT PRIMARY KEY, s TEXT)",
                "DELETE FROM b_keep", "DELETE FROM b_skip")
    start = Position(*_status(mariadb))
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for i in range(4):  # one transaction, several rows events per table
                cur.executemany("INSERT INTO b_skip VALUES (%s, %s)",
                                [(i * 100 + k, "x" * 3000) for k in range(5)])
                cur.executemany("INSERT INTO b_keep VALUES (%s, %s)",
                                [(i * 10 + k, "kept") for k in range(3)])
        conn.commit()
        with conn.cursor() as cur:
            cur.execute("UPDATE b_keep SET s = 'changed' WHERE id < 5")
            cur.execute("TRUNCATE TABLE b_skip")
        conn.commit()
    finally:
        conn.close()
    url = ServerURL.parse(mariadb.url)
    for tables in (None, lambda s, t: t == "b_keep"):
        single = _records(url, start, tables)
        batched = _batches(url, start, tables)
        assert [k for b, _ in batched for k in b] == [k for k, _ in single]
        # After a batch, the position is the one changes() gives after its last record.
        ends, i = [], 0
        for keys, pos in batched:
            i += len(keys)
            ends.append(single[i - 1][1])
        assert [pos for _, pos in batched] == ends
        assert len(batched) < len(single)  # lists, not one record each
    # Resume from a batch boundary inside the first transaction: the rest, once each.
    kept = _batches(url, start, lambda s, t: t == "b_keep")
    first, mid = kept[0], kept[1][1]
    assert mid.rows_done > 0
    rest = _batches(url, mid, lambda s, t: t == "b_keep")
    assert [k for b, _ in kept[:2] for k in b] + [k for b, _ in rest for k in b] == \
        [k for b, _ in kept for k in b]
    assert first[0] and rest
