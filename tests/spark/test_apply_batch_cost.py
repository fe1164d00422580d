"""The cheaper apply path keeps its results: duplicates, statements, tombstone commits.

Real binlog batches from the session MariaDB, applied with `apply_batch`; the Delta tables
are compared with MariaDB's rows and the Delta logs are counted.
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.spark.apply import (
    ApplyConfig, ApplyError, TableOptions, apply_batch, forget_tombstone_batches, table_path,
    tombstone_path,
)
from binlake.schema.spec import read_table_spec

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "binlake_test"


def _position(mariadb: Any) -> tuple[int, int]:
    file, pos = mariadb.binlog_end()
    return int(file.rsplit(".", 1)[1]), pos


def _batch(spark: Any, mariadb: Any, tables: str, lo: tuple[int, int],
           hi: tuple[int, int]) -> Any:
    from pyspark.sql import functions as F

    at = F.struct(F.col("seq.file_index"), F.col("seq.pos"))

    def mark(m: tuple[int, int]) -> Any:
        return F.struct(F.lit(m[0]).alias("file_index"), F.lit(m[1]).cast("bigint").alias("pos"))

    df = spark.read.format("binlake").option("tables", tables).load(str(mariadb.binlog_dir))
    return df.where((at >= mark(lo)) & (at < mark(hi))).localCheckpoint()


def _versions(path: str) -> int:
    return len(list(Path(path, "_delta_log").glob("*.json")))


def _rows(spark: Any, path: str, cols: str) -> list[tuple[Any, ...]]:
    names = [c.strip() for c in cols.split(",")]
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*names).collect())


def test_duplicates_updates_and_deletes(spark: Any, mariadb: Any, tmp_path: Path) -> None:
    mariadb.sql("DROP TABLE IF EXISTS cost_a, cost_h",
                "CREATE TABLE cost_a (id INT PRIMARY KEY, v VARCHAR(10), n INT)",
                "CREATE TABLE cost_h (id INT PRIMARY KEY, v VARCHAR(10), n INT)")
    tables = f"{DB}.cost_a,{DB}.cost_h"
    steps = [
        ["INSERT INTO cost_a VALUES (1,'a',1),(2,'b',2),(3,'c',3)",
         "INSERT INTO cost_h VALUES (1,'a',1),(2,'b',2)"],
        # updates that move no key and delete nothing: no tombstone commit
        ["UPDATE cost_a SET n = n + 10", "UPDATE cost_h SET n = n + 10 WHERE id = 1"],
        # a key move and a delete: tombstones for the old key and the deleted one
        ["UPDATE cost_a SET id = 30 WHERE id = 3", "DELETE FROM cost_a WHERE id = 2",
         "DELETE FROM cost_h WHERE id = 2", "UPDATE cost_a SET v = 'A' WHERE id = 1"],
    ]
    marks = [_position(mariadb)]
    for sql in steps:
        mariadb.sql(*sql)
        marks.append(_position(mariadb))
    conn = mariadb.connect()
    try:
        specs = {(DB, t): read_table_spec(conn, DB, t) for t in ("cost_a", "cost_h")}
    finally:
        conn.close()
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="cost", tables={
        f"{DB}.cost_h": TableOptions(scd_type=2)})
    a, h = table_path(target, DB, "cost_a"), table_path(target, DB, "cost_h")
    ta, th = tombstone_path(target, DB, "cost_a"), tombstone_path(target, DB, "cost_h")
    batches = [_batch(spark, mariadb, tables, lo, hi) for lo, hi in zip(marks, marks[1:])]

    # Every batch arrives twice in itself (at-least-once): the result is as if once.
    for i, b in enumerate(batches[:2]):
        result = apply_batch(spark, b.unionByName(b), i, config, specs)
        assert result.changes == 2 * b.count()
    assert _rows(spark, a, "id, v, n") == [(1, "a", 11), (2, "b", 12), (3, "c", 13)]
    assert _rows(spark, h, "id, v, n") == [(1, "a", 1), (1, "a", 11), (2, "b", 2)]
    assert not Path(ta).exists() and not Path(th).exists()  # updates only: no tombstones

    apply_batch(spark, batches[2].unionByName(batches[2]), 2, config, specs)
    assert _rows(spark, a, "id, v, n") == [(1, "A", 11), (30, "c", 13)]
    assert _rows(spark, h, "id, v, n") == [(1, "a", 1), (1, "a", 11), (2, "b", 2)]
    assert [r[0] for r in _rows(spark, ta, "id")] == [2, 3]
    assert [r[0] for r in _rows(spark, th, "id")] == [2]
    closed = spark.read.format("delta").load(h).where("id = 2 AND __END_AT IS NULL").count()
    assert closed == 0

    # A replay commits nothing; a late batch resurrects nothing.
    paths = [a, h, ta, th]
    before = [_versions(p) for p in paths]
    apply_batch(spark, batches[2], 2, config, specs)
    assert [_versions(p) for p in paths] == before
    # ... also after a restart, when only the tombstone tables' history knows the batch
    forget_tombstone_batches(ta)
    forget_tombstone_batches(th)
    apply_batch(spark, batches[2], 2, config, specs)
    assert [_versions(p) for p in paths] == before
    apply_batch(spark, batches[0], 3, config, specs)
    assert _rows(spark, a, "id, v, n") == [(1, "A", 11), (30, "c", 13)]
    assert spark.read.format("delta").load(h).where("__END_AT IS NULL").count() == 1

    # A crash between a batch's MERGE and its tombstones: the replay writes the tombstones.
    target2 = str(tmp_path / "lake2")
    config2 = replace(config, target=target2)
    for i, b in enumerate(batches):
        apply_batch(spark, b, i, replace(config2, tombstones=False) if i == 2 else config2,
                    specs)
    a2, ta2 = table_path(target2, DB, "cost_a"), tombstone_path(target2, DB, "cost_a")
    th2 = tombstone_path(target2, DB, "cost_h")
    assert not Path(ta2).exists() and not Path(th2).exists()
    merged = _versions(a2)
    forget_tombstone_batches(ta2)
    apply_batch(spark, batches[2], 2, config2, specs)
    assert _versions(a2) == merged
    assert [r[0] for r in _rows(spark, ta2, "id")] == [2, 3]
    assert [r[0] for r in _rows(spark, th2, "id")] == [2]

    # The tombstone append runs beside the MERGE, so a crash may leave a batch's tombstones
    # without its MERGE: the replay still deletes and moves the keys they name.
    target3 = str(tmp_path / "lake3")
    config3 = replace(config, target=target3)
    for i, b in enumerate(batches[:2]):
        apply_batch(spark, b, i, config3, specs)
    ta3, th3 = tombstone_path(target3, DB, "cost_a"), tombstone_path(target3, DB, "cost_h")
    shutil.copytree(ta, ta3)  # batch 2's tombstones (tagged with its id), and nothing else
    shutil.copytree(th, th3)
    forget_tombstone_batches(ta3)  # as a restart after the crash would
    forget_tombstone_batches(th3)
    tombs = [_versions(ta3), _versions(th3)]
    apply_batch(spark, batches[2], 2, config3, specs)
    a3, h3 = table_path(target3, DB, "cost_a"), table_path(target3, DB, "cost_h")
    assert _rows(spark, a3, "id, v, n") == [(1, "A", 11), (30, "c", 13)]
    assert spark.read.format("delta").load(h3).where("id = 2 AND __END_AT IS NULL").count() == 0
    assert [_versions(ta3), _versions(th3)] == tombs  # known by their tag: not appended again


def test_statement_logged_dml_is_refused(spark: Any, mariadb: Any, tmp_path: Path) -> None:
    mariadb.sql("DROP TABLE IF EXISTS cost_s", "CREATE TABLE cost_s (id INT PRIMARY KEY, v INT)")
    lo = _position(mariadb)
    conn = mariadb.connect(autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO cost_s VALUES (1, 1)")
            cur.execute("SET SESSION binlog_format = 'STATEMENT'")
            cur.execute("UPDATE cost_s SET v = 2 WHERE id = 1")
            cur.execute("SET SESSION binlog_format = 'ROW'")
        specs = {(DB, "cost_s"): read_table_spec(conn, DB, "cost_s")}
    finally:
        conn.close()
    batch = _batch(spark, mariadb, f"{DB}.cost_s", lo, _position(mariadb))
    target = str(tmp_path / "lake")
    with pytest.raises(ApplyError, match="statement-logged DML"):
        apply_batch(spark, batch, 0, ApplyConfig(target=target), specs)
    assert not Path(table_path(target, DB, "cost_s")).exists()  # refused before any write
    # Not a table this stream applies: not its concern.
    other = ApplyConfig(target=target, include=f"{DB}.elsewhere")
    assert apply_batch(spark, batch, 0, other, specs).tables == []
