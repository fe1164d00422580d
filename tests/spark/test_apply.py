"""Applying binlog change batches to Delta: tables equal MariaDB's, exactly once, in order.

One real workload on the session MariaDB (inserts, multi-table transactions, updates that
change keys, minimal row images, deletes, TRUNCATE, ADD COLUMN), cut into batches at commit
positions, read back with format("binlake") and applied batch by batch.
"""
from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.spark.apply import (
    ApplyConfig, ApplyError, TableOptions, apply_batch, change_log_path, foreach_batch,
    table_path, tombstone_path,
)
from binlake.schema.spec import ColumnSpec, TableSpec
from binlake.spark.tables import plan_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "binlake_test"
TABLES = ("spk_all", "spk_pair", "spk_hist")
KEYS = {"spk_all": "id", "spk_pair": "a, b", "spk_hist": "id"}

SETUP = (
    "DROP TABLE IF EXISTS spk_all, spk_pair, spk_hist",
    "CREATE TABLE spk_all (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2),"
    " big BIGINT UNSIGNED, ts TIMESTAMP(3) NULL, dt DATETIME(6), d DATE, tm TIME, j JSON,"
    " b VARBINARY(8), f FLOAT, dbl DOUBLE, e ENUM('a','b'), y YEAR, bt BIT(5))",
    "CREATE TABLE spk_pair (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
    "CREATE TABLE spk_hist (id INT PRIMARY KEY, name VARCHAR(20), v INT)",
)
STEPS: tuple[tuple[str, ...], ...] = (
    (  # 1: one transaction over three tables
        "BEGIN",
        "INSERT INTO spk_all VALUES (1,'one',1.50,18446744073709551615,'2024-01-02 03:04:05.123',"
        "'2024-01-02 03:04:05.123456','2024-01-02','-12:00:01','{\"a\":[1,2]}',x'00ff',1.1,2.2,"
        "'a',2024,b'10101'), (2,'two',-2.25,0,NULL,NULL,'1999-12-31','838:59:59','\"s\"',NULL,"
        "NULL,NULL,'b',NULL,NULL), (3,'three',3,3,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,"
        "NULL,NULL)",
        "INSERT INTO spk_pair VALUES (1,'x',1),(2,'y',2),(3,'z',3)",
        "INSERT INTO spk_hist VALUES (1,'a',10),(2,'b',20)",
        "COMMIT",
    ),
    (  # 2: updates (one changes keys), deletes, a minimal row image
        "UPDATE spk_all SET name='ONE', amount=amount+1 WHERE id=1",
        "UPDATE spk_all SET id=30 WHERE id=3",
        "DELETE FROM spk_all WHERE id=2",
        "UPDATE spk_pair SET v=v*10 WHERE a<3",
        "UPDATE spk_pair SET b='yy' WHERE a=2",
        "UPDATE spk_hist SET name='A' WHERE id=1",
        "UPDATE spk_hist SET v=11 WHERE id=1",
        "SET SESSION binlog_row_image='MINIMAL'",
        "UPDATE spk_all SET amount=9.99 WHERE id=1",
        "UPDATE spk_hist SET v=21 WHERE id=2",
        "SET SESSION binlog_row_image='FULL'",
    ),
    (  # 3: TRUNCATE, a deleted key comes back, a moved key goes
        "TRUNCATE TABLE spk_pair",
        "INSERT INTO spk_pair VALUES (5,'q',5)",
        "INSERT INTO spk_all (id, name, amount, big) VALUES (2,'two again',0,1)",
        "UPDATE spk_all SET name='two updated' WHERE id=2",
        "DELETE FROM spk_all WHERE id=30",
        "DELETE FROM spk_hist WHERE id=1",
    ),
    (  # 4: a new column, multi-row update, a re-inserted history key
        "ALTER TABLE spk_pair ADD COLUMN note VARCHAR(10)",
        "UPDATE spk_pair SET note='n', v=v+1",
        "INSERT INTO spk_pair VALUES (6,'r',6,NULL)",
        "UPDATE spk_all SET big=big-1",
        "INSERT INTO spk_hist VALUES (1,'again',12)",
    ),
)


@dataclass
class Workload:
    batches: list[Any]
    """One CDC DataFrame per step."""
    snapshots: list[dict[str, list[tuple[Any, ...]]]]
    """MariaDB's rows of every table after each step."""
    columns: list[dict[str, list[str]]]
    specs: dict[tuple[str, str], TableSpec] = field(default_factory=dict)


def _snapshot(mariadb: Any) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[str]]]:
    rows, cols = {}, {}
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            for t in TABLES:
                cur.execute(f"SELECT * FROM {t} ORDER BY {KEYS[t]}")
                rows[t] = [tuple(r) for r in cur.fetchall()]
                cols[t] = [d[0] for d in cur.description]
    finally:
        conn.close()
    return rows, cols


@pytest.fixture(scope="module")
def workload(spark: Any, mariadb: Any, binlog_batches: Any) -> Workload:
    snapshots, columns = [], []

    def snap() -> None:
        rows, cols = _snapshot(mariadb)
        snapshots.append(rows)
        columns.append(cols)

    batches, specs = binlog_batches(spark, mariadb, DB, TABLES, SETUP, STEPS, after_step=snap)
    return Workload(batches, snapshots, columns, specs)  # type: ignore[arg-type]


# -- comparing Spark rows with MariaDB rows -------------------------------------------------

def _float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _mysql_value(v: Any) -> Any:
    if isinstance(v, dt.timedelta):  # TIME -> MySQL's text
        sign, s = ("-", -v) if v < dt.timedelta(0) else ("", v)
        total = int(s.total_seconds())
        return f"{sign}{total // 3600:02d}:{total // 60 % 60:02d}:{total % 60:02d}"
    return v


def _normalise(v: Any, spark_type: str, mysql_type: str) -> Any:
    if v is None:
        return None
    if spark_type == "timestamp":  # Spark hands out naive local time
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(v, (bytes, bytearray)):
        return int.from_bytes(v, "big") if mysql_type == "bit" else bytes(v)
    if spark_type == "float":
        return _float32(v)
    if isinstance(v, Decimal) and spark_type == "decimal(20,0)":
        return int(v)
    return v


def assert_table_equals(spark: Any, target: str, w: Workload, step: int, table: str) -> None:
    df = spark.read.format("delta").load(table_path(target, DB, table))
    cols = w.columns[step][table]
    spec = w.specs[(DB, table)]
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    got = sorted(tuple(_normalise(r[c], types[c], spec.column(c).type) for c in cols)
                 for r in df.select(*cols).collect())
    want = sorted(tuple(_normalise(_mysql_value(v), types[c], spec.column(c).type)
                        for v, c in zip(row, cols)) for row in w.snapshots[step][table])
    assert got == want, (table, step + 1)


def delta_versions(path: str) -> int:
    return len(list(Path(path, "_delta_log").glob("*.json")))


# -- the tests ------------------------------------------------------------------------------

def test_column_selection_and_tracked_columns() -> None:
    spec = TableSpec("s", "t", tuple(ColumnSpec(n, "int") for n in ("id", "a", "b", "c")), ("id",))
    plan = plan_table(spec, TableOptions(columns=("a", "b"), track_history_except=("b",)))
    assert (plan.keys, plan.cols, plan.tracked) == (["id"], ["id", "a", "b"], ["a"])
    plan = plan_table(spec, TableOptions(keys=("a",), except_columns=("a", "c")))
    assert (plan.keys, plan.cols) == (["a"], ["id", "a", "b"])  # keys are never dropped
    with pytest.raises(ApplyError, match="no primary key"):
        plan_table(TableSpec("s", "nopk", spec.columns), TableOptions())
    with pytest.raises(ApplyError, match="do not exist"):
        plan_table(spec, TableOptions(keys=("nope",)))


def test_batches_apply_like_mariadb(spark: Any, workload: Workload, tmp_path: Path) -> None:
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="test-stream", change_log=True, tables={
        f"{DB}.spk_hist": TableOptions(scd_type=2, track_history_except=("name",))})
    for i, batch in enumerate(workload.batches):
        result = apply_batch(spark, batch, i + 1, config, workload.specs)
        assert set(result.tables) == {f"{DB}.{t}" for t in TABLES}
        for table in ("spk_all", "spk_pair"):
            assert_table_equals(spark, target, workload, i, table)
    last = len(workload.batches) - 1

    # SCD2: the history of spk_hist follows the change sequence (name is not tracked).
    hist = spark.read.format("delta").load(table_path(target, DB, "spk_hist"))
    history = [(r["id"], r["name"], r["v"], r["__END_AT"] is None)
               for r in hist.orderBy("id", "__START_AT").collect()]
    assert history == [
        (1, "A", 10, False),     # name changed in place, then v=11 opened a version
        (1, "A", 11, False),     # closed by the delete
        (1, "again", 12, True),  # re-inserted
        (2, "b", 20, False),
        (2, "b", 21, True),      # minimal image: name kept
    ]

    # Replaying a committed batch id commits nothing anywhere.
    paths = [table_path(target, DB, t) for t in TABLES] + [change_log_path(target)]
    before = [delta_versions(p) for p in paths]
    apply_batch(spark, workload.batches[last], last + 1, config, workload.specs)
    assert [delta_versions(p) for p in paths] == before

    # A late, older batch (under a new id) resurrects nothing and rewinds nothing.
    apply_batch(spark, workload.batches[1], last + 2, config, workload.specs)
    for table in ("spk_all", "spk_pair"):
        assert_table_equals(spark, target, workload, last, table)
    assert spark.read.format("delta").load(table_path(target, DB, "spk_hist")).count() == 5

    # The raw change log holds every applied batch once (the late one included).
    log = spark.read.format("delta").load(change_log_path(target))
    assert log.count() == sum(b.count() for b in workload.batches) + workload.batches[1].count()

    # The foreachBatch hook: stream the change log (duplicates and all) into a second lake.
    copy = str(tmp_path / "copy")
    query = (spark.readStream.format("delta").load(change_log_path(target)).drop("_binlake_batch")
             .writeStream.foreachBatch(foreach_batch(ApplyConfig(target=copy, app_id="copy"),
                                                     workload.specs))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    for table in ("spk_all", "spk_pair"):
        assert_table_equals(spark, copy, workload, last, table)


def _operations(spark: Any, path: str) -> list[str]:
    return [r["operation"] for r in
            spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()]


def test_created_tables_compact_their_small_files(spark: Any, workload: Workload,
                                                  tmp_path: Path) -> None:
    """Each batch leaves small files; Delta's auto compaction (on in the tables binlake
    creates) rewrites them in a commit of its own, and the tables stay exact."""
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="compact", change_log=True)
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "2")
    try:
        for i, batch in enumerate(workload.batches):
            apply_batch(spark, batch, i + 1, config, workload.specs)
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    last = len(workload.batches) - 1
    for table in ("spk_all", "spk_pair"):
        assert_table_equals(spark, target, workload, last, table)
    path = table_path(target, DB, "spk_all")
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert detail["properties"].get("delta.autoOptimize.autoCompact") == "true"
    assert detail["properties"].get("delta.checkpointInterval") == "100"
    assert "OPTIMIZE" in _operations(spark, path)
    for other in (change_log_path(target), tombstone_path(target, DB, "spk_all")):
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{other}`").collect()[0]
        assert detail["properties"].get("delta.autoOptimize.autoCompact") == "true", other
        assert detail["properties"].get("delta.checkpointInterval") == "100", other

    # A replayed batch id commits nothing, compaction included.
    before = delta_versions(path)
    apply_batch(spark, workload.batches[last], last + 1, config, workload.specs)
    assert delta_versions(path) == before
    assert_table_equals(spark, target, workload, last, "spk_all")

    # Off: tables are created without the property (Delta's session settings then decide).
    plain = str(tmp_path / "plain")
    off = ApplyConfig(target=plain, app_id="plain", auto_compact=False, change_log=True,
                      checkpoint_interval=None)
    apply_batch(spark, workload.batches[0], 1, off, workload.specs)
    for p in (table_path(plain, DB, "spk_all"), change_log_path(plain)):
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{p}`").collect()[0]
        assert "delta.autoOptimize.autoCompact" not in detail["properties"]
        assert "delta.checkpointInterval" not in detail["properties"]
    assert_table_equals(spark, plain, workload, 0, "spk_all")
