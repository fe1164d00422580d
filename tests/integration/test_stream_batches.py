"""`BinlogStream.batches()` hands out the records of `changes()`, a rows event (or statement)
at a time: the same records in the same order, and after each list a position that counts
all of it, so a resume from there goes on with the next record, filtered or not."""
from __future__ import annotations

from binlake.replica.position import Position
from binlake.replica.url import ServerURL
from streamcollect import collect  # tests/integration is on sys.path (rootdir-less test dirs)


def _key(rec) -> tuple:
    return rec.table, rec.op, tuple(sorted((rec.after or rec.before or {}).items()))


def _records(url: ServerURL, start: Position, tables=None) -> list[tuple]:
    return collect(url, start, lambda rec, bs: (_key(rec), bs.position), tables=tables)


def _batch(batch, bs) -> tuple:
    assert batch and isinstance(batch, list)
    return [_key(rec) for rec in batch], bs.position


def _batches(url: ServerURL, start: Position, tables=None, limit: int | None = None):
    return collect(url, start, _batch, tables=tables, limit=limit, batches=True)


def test_batches_are_the_records_of_changes_with_the_same_resume_points(mariadb) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS b_keep (id INT PRIMARY KEY, s TEXT)",
                "CREATE TABLE IF NOT EXISTS b_skip (id INT PRIMARY KEY, s TEXT)",
                "DELETE FROM b_keep", "DELETE FROM b_skip")
    start = Position(*mariadb.binlog_end())
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
