"""`BinlogStream.batches()` hands out the records of `changes()`, a rows event (or statement)
at a time: the same records in the same order, and after each list a position that counts
all of it, so a resume from there goes on with the next record, filtered or not."""
from __future__ import annotations

import pytest

import binlake.cdc.changes as changes
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from streamcollect import collect  # tests/integration is on sys.path (rootdir-less test dirs)


def _key(rec) -> tuple:
    return rec.table, rec.op, tuple(sorted((rec.after or rec.before or {}).items()))


def _records(url: ServerURL, start: Position, tables=None) -> list[tuple]:
    return collect(url, start, lambda rec, bs: (_key(rec), bs.position), tables=tables)


def _batch(batch, bs) -> tuple:
    assert batch and isinstance(batch, list)
    return [_key(rec) for rec in batch], bs.position


def _same_records_and_positions(lists: list, single: list) -> None:
    """(items, position) lists hold the (item, position) records in order, and after each
    list the position is the one changes() gives after its last record."""
    assert [k for b, _ in lists for k in b] == [k for k, _ in single]
    ends, i = [], 0
    for items, _ in lists:
        i += len(items)
        ends.append(single[i - 1][1])
    assert [pos for _, pos in lists] == ends


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
        _same_records_and_positions(batched, single)
        assert len(batched) < len(single)  # lists, not one record each
    # Resume from a batch boundary inside the first transaction: the rest, once each.
    kept = _batches(url, start, lambda s, t: t == "b_keep")
    first, mid = kept[0], kept[1][1]
    assert mid.rows_done > 0
    rest = _batches(url, mid, lambda s, t: t == "b_keep")
    assert [k for b, _ in kept[:2] for k in b] + [k for b, _ in rest for k in b] == \
        [k for b, _ in kept for k in b]
    assert first[0] and rest


def _full(rec) -> tuple:
    """Every field of a record (its TABLE_MAP by what it maps)."""
    tm = rec.table_map
    return (rec.op, rec.schema, rec.table, rec.before, rec.after, rec.primary_key, rec.file,
            rec.pos, rec.end_pos, rec.row, rec.inner, rec.gtid, rec.timestamp,
            (tm.schema, tm.table, tm.table_id) if tm is not None else None)


def _merged(url: ServerURL, start: Position, tables=None):
    return collect(url, start, lambda batch, bs: ([_full(r) for r in batch], bs.position),
                   tables=tables, batches=True, per_event=False)


def _load_interleaved(mariadb) -> Position:
    """One transaction of rows events of three tables, in turns: multi-row and one-row
    events, rows past the 64 KB a merged list takes, updates and deletes; then a second."""
    mariadb.sql("CREATE TABLE IF NOT EXISTS m_keep (id INT PRIMARY KEY, s LONGTEXT)",
                "CREATE TABLE IF NOT EXISTS m_skip (id INT PRIMARY KEY, s TEXT)",
                "CREATE TABLE IF NOT EXISTS m_also (id INT PRIMARY KEY, n INT)",
                "DELETE FROM m_keep", "DELETE FROM m_skip", "DELETE FROM m_also")
    start = Position(*mariadb.binlog_end())
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for i in range(3):
                cur.executemany("INSERT INTO m_keep VALUES (%s, %s)",
                                [(i * 10 + k, "é€😀" * 3000 if k % 2 else "k") for k in range(6)])
                cur.executemany("INSERT INTO m_skip VALUES (%s, %s)",
                                [(i * 10 + k, "x" * 2000) for k in range(4)])
                cur.executemany("INSERT INTO m_also VALUES (%s, %s)", [(i * 10 + k, k) for k in range(5)])
            cur.execute("UPDATE m_keep SET s = CONCAT(s, '!') WHERE id < 15")
            cur.execute("DELETE FROM m_also WHERE id > 20")
            cur.execute("DELETE FROM m_keep WHERE id > 25")
        conn.commit()
        with conn.cursor() as cur:
            cur.execute("INSERT INTO m_keep VALUES (100, 'one'), (101, 'two')")
            cur.execute("UPDATE m_also SET n = n + 1")
        conn.commit()
    finally:
        conn.close()
    return start


def test_merged_batches_are_the_records_of_changes_with_the_same_resume_points(mariadb) -> None:
    """batches(per_event=False): the records changes() hands out, every field the same, in
    lists that span rows events; after each list the position changes() has after its last
    record; and a resume from any of those positions goes on with the next record."""
    start = _load_interleaved(mariadb)
    url = ServerURL.parse(mariadb.url)
    for tables in (None, lambda s, t: t != "m_skip"):
        single = collect(url, start, lambda rec, bs: (_full(rec), bs.position), tables=tables)
        merged = _merged(url, start, tables)
        _same_records_and_positions(merged, single)
        # The run made lists of several events (more than one event position in a list),
        # and ended them at the size it keeps to.
        spans = [len({r[7] for r in b}) for b, _ in merged]
        assert max(spans) > 1 or changes._make_records is None  # (C only)
        assert len(merged) < len(single)
        assert all(b for b, _ in merged)
        for cut in (1, len(merged) // 2, len(merged) - 2):
            pos = merged[cut][1]
            rest = _merged(url, pos, tables)
            assert [r for b, _ in rest for r in b] == [r for b, _ in merged[cut + 1:] for r in b]


def test_a_failing_filter_inside_a_merged_list_hands_out_none_of_it(mariadb) -> None:
    """A table filter that raises at a rows event in the middle of a list: the error comes
    out, the list it was filling is not handed out nor counted, and a stream resumed from
    the position reads from the record after the last one handed out."""
    start = _load_interleaved(mariadb)
    url = ServerURL.parse(mariadb.url)
    seen: list[str] = []

    def boom(schema: str, table: str) -> bool:
        seen.append(table)
        if table == "m_also" and seen.count("m_also") == 3:  # its third TABLE_MAP
            raise RuntimeError("filter failed")
        return True

    bs = BinlogStream(url, StreamOptions(start=start, until_end=True, tables=boom))
    got: list[tuple] = []
    with pytest.raises(RuntimeError, match="filter failed"):
        try:
            for batch in bs.batches(per_event=False):
                got.extend(_full(r) for r in batch)
        finally:
            stopped = bs.position
            bs.close()
    every = collect(url, start, lambda rec, bs: _full(rec))
    assert got and got == every[:len(got)]
    assert stopped.rows_done == len(got)
    rest = collect(url, stopped, lambda rec, bs: _full(rec))
    assert got + rest == every
