"""TRUNCATE arrives as a statement, not rows: it must still become a change record."""
from __future__ import annotations

from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_files


def test_truncate_becomes_a_record(mariadb) -> None:
    mariadb.sql("CREATE DATABASE IF NOT EXISTS other", "DROP TABLE IF EXISTS trunc_me",
                "CREATE TABLE trunc_me (id INT PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS other.t2 (id INT)",
                "FLUSH BINARY LOGS")
    mariadb.sql("INSERT INTO trunc_me VALUES (1), (2)", "TRUNCATE TABLE trunc_me",
                "INSERT INTO trunc_me VALUES (3)", "TRUNCATE other.t2")
    mariadb.sql("FLUSH BINARY LOGS")
    files = sorted(mariadb.binlog_dir.glob("mariadb-bin.[0-9]*"))
    recs = [c for c in iter_changes(read_files(files)) if c.table in ("trunc_me", "t2")]
    ops = [(c.op, c.schema, c.table) for c in recs]
    assert ops[-5:] == [("insert", "binlake_test", "trunc_me"), ("insert", "binlake_test", "trunc_me"),
                        ("truncate", "binlake_test", "trunc_me"), ("insert", "binlake_test", "trunc_me"),
                        ("truncate", "other", "t2")]
    trunc = [c for c in recs if c.op == "truncate"]
    assert ("other", "t2") in [(c.schema, c.table) for c in trunc]
    assert trunc[0].statement and trunc[0].position > recs[0].position
