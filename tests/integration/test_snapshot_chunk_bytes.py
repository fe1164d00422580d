"""The snapshot planner bounds a chunk in bytes as well as rows: a table of large values is
split even when its row count fits one chunk."""
from __future__ import annotations

from typing import Any

from binlake.snapshot.plan import plan_snapshot

DB = "binlake_test"


def test_wide_rows_split_into_chunks_by_bytes(mariadb: Any) -> None:
    mariadb.sql("DROP TABLE IF EXISTS chunk_bytes",
                "CREATE TABLE chunk_bytes (id INT PRIMARY KEY, body MEDIUMTEXT)",
                "INSERT INTO chunk_bytes SELECT seq, REPEAT(CHAR(65 + seq % 26), 20000) "
                "FROM seq_1_to_300",
                "ANALYZE TABLE chunk_bytes", database=DB)
    avg = mariadb.sql("SELECT avg_row_length FROM information_schema.tables WHERE "
                      f"table_schema = '{DB}' AND table_name = 'chunk_bytes'", database=None)[0][0]
    assert avg > 10_000, avg  # the statistics see the large values
    url = mariadb.url
    by_rows = plan_snapshot(url, f"{DB}.chunk_bytes", chunk_bytes=0)
    assert len(by_rows) == 1 and by_rows[0].table_rows == 300
    by_bytes = plan_snapshot(url, f"{DB}.chunk_bytes", chunk_bytes=1 << 20)
    # about 1 MiB of rows each: 300 rows of ~20 KB -> 5-8 chunks, covering every key once
    assert 4 <= len(by_bytes) <= 12, [(c.lo, c.hi) for c in by_bytes]
    assert by_bytes[0].lo is None and by_bytes[-1].hi is None
    assert all(a.hi == b.lo for a, b in zip(by_bytes, by_bytes[1:]))
    small = plan_snapshot(url, f"{DB}.chunk_bytes", chunk_size=100, chunk_bytes=1 << 30)
    assert len(small) == 3  # the row bound still applies
    mariadb.sql("DROP TABLE chunk_bytes", database=DB)
