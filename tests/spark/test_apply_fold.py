"""Batches folded on the driver (`apply_batch(..., arrow=)`) commit exactly what the generic
Spark way commits: the same batches go both ways into two lakes, compared value by value
(data tables and tombstones), for every column type of the apply and typing tests, with
key moves, minimal images, TRUNCATE, deletes, re-inserts, a replay and a late batch.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from binlake.cdc.net import net_scd1, present_columns
from binlake.spark.apply import ApplyConfig, TableOptions, apply_batch, fold_choice
from binlake.spark.tables import table_path, tombstone_path

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "binlake_test"
TABLES = ("fold_all", "fold_pair", "fold_hist", "fold_dkey", "fold_geo")
SETUP = (
    "SET SESSION sql_mode = ''",
    f"DROP TABLE IF EXISTS {', '.join(TABLES)}",
    "CREATE TABLE fold_all (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT,"
    " su SMALLINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, iu INT UNSIGNED, bi BIGINT,"
    " bu BIGINT UNSIGNED, dec2 DECIMAL(10,2), dec65 DECIMAL(65,30), f FLOAT, dbl DOUBLE,"
    " bt5 BIT(5), bt64 BIT(64), y YEAR, d DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL,"
    " tm TIME(2), c CHAR(5), v VARCHAR(40), tx TEXT, bl BLOB, vb VARBINARY(8), e ENUM('a','b'),"
    " st SET('x','y'), j JSON, u UUID, i6 INET6)",
    "CREATE TABLE fold_pair (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
    "CREATE TABLE fold_hist (id INT PRIMARY KEY, name VARCHAR(20), v INT)",
    "CREATE TABLE fold_dkey (d DATE PRIMARY KEY, v INT)",
    "CREATE TABLE fold_geo (id INT PRIMARY KEY, g GEOMETRY)",
)
ROW1 = ("(1,-128,255,-32768,65535,-8388608,16777215,4294967295,-9223372036854775808,"
        "18446744073709551615,-12345678.91,'12345678901234567890123456789012345.123456789012345678"
        "901234567891',1.1,-2.5e300,b'10101',b'1111111111111111111111111111111111111111111111111"
        "111111111111111',2024,'2024-02-29','2024-01-02 03:04:05.123456','2024-01-02 03:04:05.123',"
        "'-838:59:59.99','ab','héllo ✓','a long text',x'00ff10',x'deadbeef','b','x,y',"
        "'{\"k\":[1,2.5,\"s\"]}','123e4567-e89b-12d3-a456-426614174000','::ffff:1.2.3.4')")
STEPS: tuple[tuple[str, ...], ...] = (
    (
        "SET SESSION sql_mode = ''",
        "BEGIN",
        f"INSERT INTO fold_all VALUES {ROW1}",
        "INSERT INTO fold_all (id, d, dt, v) VALUES (2, '0000-00-00', '2024-02-00 00:00:00', 'z'),"
        " (3, NULL, NULL, NULL)",
        "INSERT INTO fold_pair VALUES (1,'x',1),(2,'y',2),(3,'z',3)",
        "INSERT INTO fold_hist VALUES (1,'a',10),(2,'b',20)",
        "INSERT INTO fold_dkey VALUES ('2024-01-01',1),('2024-01-02',2)",
        "INSERT INTO fold_geo VALUES (1, ST_GeomFromText('POINT(1 2)')), (2, NULL)",
        "COMMIT",
    ),
    (  # updates, a key move in one transaction with more changes, deletes, minimal images
        "UPDATE fold_all SET v='ONE', dec2=dec2+1, f=f*2 WHERE id=1",
        "BEGIN",
        "UPDATE fold_all SET id=30 WHERE id=3",
        "UPDATE fold_all SET v='moved' WHERE id=30",
        "COMMIT",
        "DELETE FROM fold_all WHERE id=2",
        "UPDATE fold_pair SET v=v*10 WHERE a<3",
        "UPDATE fold_pair SET b='yy' WHERE a=2",
        "UPDATE fold_hist SET name='A' WHERE id=1",
        "UPDATE fold_dkey SET d='2024-02-01' WHERE v=1",
        "UPDATE fold_geo SET g=ST_GeomFromText('LINESTRING(0 0,1 1)') WHERE id=2",
        "SET SESSION binlog_row_image='MINIMAL'",
        "UPDATE fold_all SET dec2=9.99, tx='minimal' WHERE id=1",
        "UPDATE fold_pair SET b='w' WHERE a=1",
        "UPDATE fold_hist SET v=21 WHERE id=2",
        "SET SESSION binlog_row_image='NOBLOB'",
        "UPDATE fold_all SET bl=x'01', v='noblob' WHERE id=1",
        "SET SESSION binlog_row_image='FULL'",
    ),
    (  # TRUNCATE with rows before and after it, a deleted key back, a delete-insert-update
        "INSERT INTO fold_pair VALUES (9,'gone',9)",
        "TRUNCATE TABLE fold_pair",
        "INSERT INTO fold_pair VALUES (5,'q',5)",
        "INSERT INTO fold_all (id, v, bu) VALUES (2,'two again',1)",
        "UPDATE fold_all SET v='two updated' WHERE id=2",
        "DELETE FROM fold_all WHERE id=30",
        "INSERT INTO fold_all (id, v) VALUES (30, 'back')",
        "DELETE FROM fold_all WHERE id=30",
        "DELETE FROM fold_hist WHERE id=1",
        "DELETE FROM fold_dkey WHERE v=2",
    ),
)


@pytest.fixture(scope="module")
def fold_workload(spark: Any, mariadb: Any, binlog_batches: Any) -> tuple[list[Any], dict[tuple[str, str], Any]]:
    return binlog_batches(spark, mariadb, DB, TABLES, SETUP, STEPS)


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("delta").load(path)
    cols = sorted(df.columns)
    return sorted((tuple(r[c] for c in cols) for r in df.select(*cols).collect()), key=repr)


def _version(path: str) -> int:
    return max(int(p.stem) for p in Path(path, "_delta_log").glob("*.json"))


def _same_lakes(spark: Any, a: str, b: str, tables: tuple[str, ...]) -> None:
    for t in tables:
        for path in (table_path, tombstone_path):
            pa_, pb = path(a, DB, t), path(b, DB, t)
            if not Path(pa_).exists():
                assert not Path(pb).exists(), pb
                continue
            assert _rows(spark, pb) == _rows(spark, pa_), (t, path.__name__)


def test_folded_batches_commit_what_the_generic_way_commits(
        spark: Any, fold_workload: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    batches, specs = fold_workload
    options = {f"{DB}.fold_hist": TableOptions(scd_type=2)}
    # the choice, per table: folded unless SCD2, a key that is not exact as text, nested values
    why = {t: fold_choice(specs[(DB, t)], ApplyConfig(target="", tables=options)) for t in TABLES}
    assert why == {"fold_all": None, "fold_pair": None, "fold_hist": "SCD type 2",
                   "fold_dkey": "key column d is date", "fold_geo": "column g is geometry"}
    # both ways for the folded tables (the generic tables: the generic way's own tests); the steps, then a late batch (step 2 again under a new id: tombstones after
    # its changes send its tables the generic way)
    tables = ("fold_all", "fold_pair")
    generic = ApplyConfig(target=str(tmp_path / "generic"), app_id="g",
                          include=",".join(f"{DB}.{t}" for t in tables))
    folded = ApplyConfig(target=str(tmp_path / "folded"), app_id="f", include=generic.include)
    driver = ApplyConfig(target=str(tmp_path / "driver"), app_id="d", include=generic.include,
                         driver_writes=True)
    arrows = [b.toArrow() for b in batches]
    order = [*range(len(batches)), 1]
    # the MERGE's SET is plain for columns every net upsert carries (here every batch: each
    # minimal image follows a full one of its key); the CASE case: the test below
    spec = specs[(DB, "fold_all")]
    cols = [c.name for c in spec.columns]
    plains = [present_columns(net_scd1(a.filter(pc.equal(a.column("table"), "fold_all")),
                                       list(spec.primary_key), cols)) for a in arrows]
    assert all(p == set(range(len(cols))) for p in plains)
    caplog.set_level(logging.DEBUG, logger="binlake.apply")
    for i, k in enumerate(order):
        apply_batch(spark, batches[k], i + 1, generic, specs)
        caplog.clear()
        apply_batch(spark, batches[k], i + 1, folded, specs, arrow=arrows[k])
        slow = {r.table for r in caplog.records  # type: ignore[attr-defined]
                if r.msg == "table applied the generic way"}
        expect = {f"{DB}.fold_all", f"{DB}.fold_pair"} if i == len(batches) else set()  # late
        assert slow == expect, (i, slow)
        # the same folds MERGEd by delta-rs in the driver, but for the late batch (generic):
        # fold_all's first batch has zero dates (Spark types them), fold_pair's creates it
        caplog.clear()
        apply_batch(spark, batches[k], i + 1, driver, specs, arrow=arrows[k])
        merged = {(r.table, r.new_table) for r in caplog.records  # type: ignore[attr-defined]
                  if r.msg == "table merged in the driver" and not r.replay}
        expect = ({(f"{DB}.fold_pair", True)} if i == 0 else set() if i == len(batches) else
                  {(f"{DB}.fold_all", False), (f"{DB}.fold_pair", False)})
        assert merged == expect, (i, merged)
        if i in (len(batches) - 1, len(batches)):
            _same_lakes(spark, generic.target, folded.target, tables)
            _same_lakes(spark, generic.target, driver.target, tables)
    # a replayed batch id commits nothing again, in the driver as in Spark (fold_all's own
    # tombstones send it the generic way; fold_pair's newest, its TRUNCATE marker, is older
    # than the changes the fold keeps)
    versions = {t: _version(table_path(driver.target, DB, t)) for t in tables}
    caplog.clear()
    apply_batch(spark, batches[2], 3, driver, specs, arrow=arrows[2])
    assert {r.table for r in caplog.records  # type: ignore[attr-defined]
            if r.msg == "table merged in the driver" and r.replay} == {f"{DB}.fold_pair"}
    assert {t: _version(table_path(driver.target, DB, t)) for t in tables} == versions
    _same_lakes(spark, generic.target, driver.target, tables)
    values = {r["id"]: r for r in spark.read.format("delta")
              .load(table_path(folded.target, DB, "fold_all")).collect()}
    assert values[1]["v"] == "noblob" and values[1]["tx"] == "minimal"  # minimal images kept
    assert values[2]["d"] is None and 30 not in values  # zero date: NULL; re-deleted key gone


def test_net_of_a_key_move_and_a_minimal_image() -> None:
    """The fold alone: a moved key deletes the old key; a minimal image keeps the columns it
    lacks as absent (the MERGE keeps the target's values there)."""
    import pyarrow as pa

    from binlake.cdc.arrow import CDC_SCHEMA

    def rec(op: str, pos: int, before: str | None, after: str | None) -> dict[str, Any]:
        return {"op": op, "schema": "s", "table": "t", "ts": None,
                "seq": {"file_index": 1, "pos": pos, "inner": 0, "row": 0},
                "before": before, "after": after}

    rows = [rec("update", 10, '{"id":1,"v":"a","w":1}', '{"id":2,"v":"a","w":1}'),
            rec("update", 20, '{"id":2}', '{"w":5}'),
            rec("update", 20, '{"id":2}', '{"w":5}'),  # a duplicate counts once
            rec("delete", 5, '{"id":7,"v":null,"w":null}', None)]
    batch = pa.Table.from_pylist(rows, schema=CDC_SCHEMA)
    net = net_scd1(batch, ["id"], ["id", "v", "w"])
    got = {r["_k0"]: r for r in net.table.to_pylist()}
    assert set(got) == {"1", "2", "7"} and net.deletes == 2
    assert got["1"]["_kind"] == "delete" and got["7"]["_kind"] == "delete"
    two = got["2"]
    assert (two["_kind"], two["_full"], two["_c1"], two["_p1"], two["_c2"], two["_p2"]) == \
        ("upsert", True, "a", True, "5", True)
    assert net.min_seq == (1, 5, 0, 0) and net.max_delete_seq == (1, 10, 0, 0)
    assert net_scd1(batch, ["id"], ["id", "v", "w"], trunc=(1, 15, 0, 0)).table.num_rows == 1


def test_columns_every_net_upsert_carries() -> None:
    """`present_columns`: a column is plain when every net upsert is a full row or has it;
    deletes do not count (the MERGE does not set their columns)."""
    import pyarrow as pa

    from binlake.cdc.arrow import CDC_SCHEMA

    def rec(op: str, pos: int, before: str | None, after: str | None) -> dict[str, Any]:
        return {"op": op, "schema": "s", "table": "t", "ts": None,
                "seq": {"file_index": 1, "pos": pos, "inner": 0, "row": 0},
                "before": before, "after": after}

    full = [rec("insert", 1, None, '{"id":1,"v":"a","w":1}'),
            rec("update", 2, '{"id":2,"v":"b","w":2}', '{"id":2,"v":"c","w":2}'),
            rec("delete", 3, '{"id":3}', None)]
    cols = ["id", "v", "w"]
    net = net_scd1(pa.Table.from_pylist(full, schema=CDC_SCHEMA), ["id"], cols)
    assert present_columns(net) == {0, 1, 2}
    # a minimal update of a key the batch did not insert: only its columns are plain
    minimal = [*full, rec("update", 4, '{"id":4}', '{"w":9}')]
    net = net_scd1(pa.Table.from_pylist(minimal, schema=CDC_SCHEMA), ["id"], cols)
    assert present_columns(net) == {2}
    # the same minimal update after the key's insert in the batch: a full row
    folded = [*full, rec("update", 4, '{"id":1}', '{"w":9}')]
    net = net_scd1(pa.Table.from_pylist(folded, schema=CDC_SCHEMA), ["id"], cols)
    assert present_columns(net) == {0, 1, 2}
    empty = net_scd1(pa.Table.from_pylist([], schema=CDC_SCHEMA), ["id"], cols)
    assert present_columns(empty) == {0, 1, 2}
