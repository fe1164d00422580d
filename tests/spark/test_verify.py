"""`binlake verify`: chunked checksums of the source (SQL) and the Delta table (Spark).

One apply of the binlog (module fixture: the sync's apply step on the stream's CDC rows) of a
table with every column type binlake maps and tables with other key shapes, on the session
MariaDB; the tests verify it, then change copies of
the Delta tables behind binlake's back with delta-rs and check that verify finds the rows.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.verify import verify

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "verify_db"
FIXED = f"{DB}.types,{DB}.tags,{DB}.events"
"""The tables no test changes on the source."""

TYPES = (
    "CREATE TABLE types (id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, "
    "si SMALLINT UNSIGNED, mi MEDIUMINT, iu INT UNSIGNED, bi BIGINT, ui BIGINT UNSIGNED, "
    "f FLOAT, d DOUBLE, dc DECIMAL(30,4), dbig DECIMAL(65,10), b BIT(5), b64 BIT(64), y YEAR, "
    "bn BINARY(4), vb VARBINARY(10), bl BLOB, e ENUM('a','b'), st SET('x','y','z'), "
    "ts TIMESTAMP(3) NULL, dt DATETIME(2), dt6 DATETIME(6), t TIME(1), j JSON, g GEOMETRY, "
    "dz DATE, c CHAR(5), v VARCHAR(20), tx TEXT, l1 VARCHAR(10) CHARACTER SET latin1, u UUID, i6 INET6, i4 INET4, "
    # utf8mb4 columns of three collations in one row text (read as their bytes)
    "uc VARCHAR(10) COLLATE utf8mb4_unicode_ci, ub VARCHAR(10) COLLATE utf8mb4_bin)")
ROWS = (
    "INSERT INTO types VALUES "
    "(1, -5, 255, 65535, -8388608, 4294967295, -9223372036854775808, 18446744073709551615, "
    "3.40282e38, 0.1e0 + 0.2e0, '-12.5000', '12345678901234567890123456789012345678901234567890.1234567890', "
    "b'101', b'1111111111111111111111111111111111111111111111111111111111111111', 0, 'ab', "
    "x'00ff', x'010203', 'b', 'x,z', '2024-01-02 03:04:05.123', '0000-00-00 00:00:00', "
    "'2024-01-02 03:04:05.000001', '-838:59:59.9', '{\"a\": 1,  \"b\": [1.50, 2]}', "
    "ST_GeomFromText('POINT(1 2)', 4326), '2024-02-00', 'ab ', 'tab\\t\"q\" é', 'long ✓', 'café', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '::1', '192.0.2.1', 'Ünï', 'Bin'), "
    "(2, 127, 0, 0, 0, 0, 0, 0, 16777217, 1e0 / 3e0, 0, 0, b'0', 0, 2155, 'ab\\0\\0', '', '', "
    "'', '', NULL, '9999-12-31 23:59:59.99', '0001-01-01 00:00:00', '12:00:00', '[]', NULL, "
    "'0000-00-00', '', '', NULL, '', '00000000-0000-0000-0000-000000000000', '::ffff:1.2.3.4', '0.0.0.0', '', ''), "
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1.17549435e-38, 4.9e-324, NULL, NULL, NULL, "
    "NULL, 1901, NULL, NULL, NULL, NULL, NULL, '1970-01-01 00:00:01', '1000-01-01 00:00:00', "
    "NULL, '00:00:00', '\"s\"', ST_GeomFromText('LINESTRING(0 0,1 1)'), '1000-01-01', NULL, "
    "NULL, '', NULL, NULL, NULL, NULL, NULL, NULL), "
    "(4, 0, 0, 0, 0, 0, 0, 0, -0.0, -1.7976931348623157e308, 0.0001, -0.5, 0, 1, 2000, '', '', "
    "'', 'a', 'x,y,z', '2038-01-19 03:14:07.999', '2024-02-30 00:00:00', '0000-01-01 00:00:00', "
    "'-00:00:00.5', 'null', NULL, '0000-01-01', 'x', ' sp ', 'a\\0b', NULL, '6ccd780c-baba-1026-9564-5b8c656024db', '2001:db8::ff00:42:8329', '255.255.255.255', 'a,b', 'N'), "
    "(5, 1, 1, 1, 1, 1, 1, 1, -1.5, 1e300, 1, 1, 1, 1, 1999, 'abcd', 'V', 'B', 'a', 'y', "
    "'2000-01-01 00:00:00', '2000-01-01 00:00:00.5', '2000-01-01 00:00:00.000005', '01:02:03', "
    "'{}', ST_GeomFromText('POINT(0 0)'), '2000-02-29', 'N', 'N', 'NULL', 'N', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '1:0:2:0:3:0:4:0', '10.0.0.1', 'ß', '✓,')")


def apply_binlog(spark: Any, mariadb: Any, start: tuple[str, int], warehouse: Path,
                 batch_id: int) -> None:
    """Apply the binlog of verify_db from `start` to the end into `warehouse` with the
    sync's apply step (one batch): what a sync's stream does, without its streaming query
    (whose start-up would cost most of this file's time)."""
    import pyarrow as pa

    from binlake.replica.position import Position
    from binlake.replica.stream import BinlogStream, StreamOptions
    from binlake.replica.url import ServerURL
    from binlake.spark.apply import ApplyConfig, apply_batch
    from binlake.cdc.arrow import iter_cdc_batches
    from binlake.schema.spec import read_table_spec

    from binlake.replica.range_schema import range_tracker

    url = ServerURL.parse(mariadb.url)
    ours = lambda s, t: s == DB  # noqa: E731
    # the shapes a sync's schema history gives (UUID/INET types are known only there)
    shapes = range_tracker(url, Position(*start), lambda: mariadb.connect(database=DB),
                           tables=ours, server_id=6449200 + batch_id)
    stream = BinlogStream(url, StreamOptions(
        start=Position(*start), until_end=True, server_id=6449300 + batch_id,
        tables=ours, table_resolver=shapes))
    try:
        changes = pa.Table.from_batches(list(iter_cdc_batches(stream.changes())))
    finally:
        stream.close()
    conn = mariadb.connect(database=DB)
    try:
        specs = {(DB, t): read_table_spec(conn, DB, t)
                 for t in ("types", "tags", "events", "moving")}
    finally:
        conn.close()
    apply_batch(spark, spark.createDataFrame(changes), batch_id,
                ApplyConfig(target=str(warehouse), app_id="verify-test"), specs)


@pytest.fixture(scope="module")
def synced(mariadb: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse with the verify_db tables, applied from the binlog by the sync's apply."""
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", database=None)
    mariadb.sql(
        TYPES,
        # a composite text key: chunked by key hash (collation order is not Spark's order)
        "CREATE TABLE tags (name VARCHAR(20), n INT, note VARCHAR(10), PRIMARY KEY (name, n))",
        # a composite key of range types
        "CREATE TABLE events (day DATE, at DATETIME(3), seq BIGINT UNSIGNED, amount "
        "DECIMAL(10,2), PRIMARY KEY (day, at, seq))",
        # changed by the online test only
        "CREATE TABLE moving (id INT PRIMARY KEY, v INT)", database=DB)
    start = mariadb.binlog_end()
    mariadb.sql(
        "SET SESSION sql_mode = ''", ROWS,
        "INSERT INTO tags VALUES " + ",".join(f"('Tag{i % 7}', {i}, 'n{i}')" for i in range(40)),
        "INSERT INTO events VALUES " + ",".join(
            f"('2024-01-{1 + i % 5:02d}', '2024-01-01 00:00:{i % 60:02d}.{i:03d}', {i}, {i}.25)"
            for i in range(60)),
        "INSERT INTO moving VALUES " + ",".join(f"({i}, {i})" for i in range(20)),
        database=DB)
    warehouse = tmp_path_factory.mktemp("verify") / "lake"
    apply_binlog(spark, mariadb, start, warehouse, 0)
    return warehouse


def copy_lake(synced: Path, tmp_path: Path) -> Path:
    out = tmp_path / "lake"
    shutil.copytree(synced, out)
    return out


def test_canonical_text_is_the_same_on_both_sides(mariadb: Any, spark: Any,
                                                   synced: Path) -> None:
    """Every column of every tricky row has the same canonical text in SQL and in Spark,
    and the texts are the exact values (not merely equal on both sides)."""
    from binlake.replica.url import ServerURL
    from binlake.spark.verify import lake_table, value_expr
    from binlake.verify.canonical import value_sql
    from binlake.verify.source import Source

    src = Source(ServerURL.parse(mariadb.url))
    try:
        t = src.describe(DB, "types")
        plan = src.plan(t, 100)
        exprs = ", ".join(value_sql(c) for c in t.columns)
        source = {int(r[0]): [v.decode() if isinstance(v, bytes) else v for v in r[1:]]
                  for r in src.rows(f"SELECT id, {exprs} FROM {DB}.types")}
    finally:
        src.close()
    lake = lake_table(spark, str(synced), plan)
    df = lake.df
    got = {r[0]: list(r[1:]) for r in df.select(
        "id", *[value_expr(c, c.name, df.schema[c.name].dataType).alias(c.name)
                for c in t.columns]).collect()}
    names = [c.name for c in t.columns]
    for key in source:
        diff = [(n, a, b) for n, a, b in zip(names, source[key], got[key]) if a != b]
        assert not diff, (key, diff)
    row = {key: dict(zip(names, vals)) for key, vals in source.items()}
    assert row[1]["d"] == "+-2p5404319552844596"  # 0.30000000000000004 by its bits
    assert row[4]["f"] == "0" and row[5]["f"] == "-0p6755399441055744"  # -0.0, -1.5
    assert row[3]["d"] == "+-1074p4503599627370496"  # the smallest subnormal
    assert row[1]["ui"] == "18446744073709551615" and row[1]["b64"] == "18446744073709551615"
    assert row[1]["dc"] == "-12.5000" and row[2]["dbig"] == "0.0000000000"
    assert row[1]["dt"] is None and row[1]["dz"] is None  # zero dates land as NULL
    assert row[4]["dt6"] == "0000-01-01 00:00:00.000000"
    assert row[1]["ts"] == "1704164645123000"
    assert row[2]["bn"] == "61620000" and row[2]["vb"] == ""  # BINARY padding; '' not NULL
    assert row[3]["vb"] is None
    assert row[1]["j"] == '{"a": 1,  "b": [1.50, 2]}'  # MariaDB's JSON text as written
    assert row[1]["g"] == "4326:0101000000000000000000F03F0000000000000040"
    assert row[5]["tx"] == "NULL" and row[3]["tx"] == "" and row[2]["tx"] is None
    assert row[1]["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" and row[3]["u"] is None
    assert row[1]["i6"] == "::1" and row[5]["i6"] == "1::2:0:3:0:4:0"  # the server's text
    assert row[2]["i6"] == "::ffff:1.2.3.4" and row[4]["i4"] == "255.255.255.255"
    assert row[1]["uc"] == "Ünï" and row[5]["ub"] == "✓," and row[3]["uc"] is None
    assert row[1]["l1"] == "café"  # latin1, converted to UTF-8


def test_row_text_is_the_same_on_both_sides_and_reads_back(mariadb: Any, spark: Any,
                                                          synced: Path) -> None:
    """The hashed row text (values joined by ',', only text framed by its byte length) is
    byte for byte the same in SQL and in Spark, and is the values in order."""
    from pyspark.sql import functions as F

    from binlake.replica.url import ServerURL
    from binlake.spark.verify import lake_table, row_text
    from binlake.verify.canonical import row_sql, value_sql
    from binlake.verify.source import Source

    src = Source(ServerURL.parse(mariadb.url))
    try:
        t = src.describe(DB, "types")
        plan = src.plan(t, 100)
        exprs = ", ".join(value_sql(c) for c in t.columns)
        rows = src.rows(f"SELECT id, {row_sql(t.columns)}, {exprs} FROM {DB}.types")
    finally:
        src.close()
    lake = lake_table(spark, str(synced), plan)
    got = {r[0]: r[1] for r in lake.df.select(
        "id", F.expr(row_text(t.columns, lake.df, lake.names)).alias("t")).collect()}
    assert len(rows) == len(got) == 5
    for r in rows:
        text, *values = [v.decode() if isinstance(v, bytes) else v for v in r[1:]]
        assert got[int(r[0])] == text, int(r[0])
        want = ",".join("N" if v is None else f"{len(v.encode())}:{v}" if c.kind == "text"
                        else v for c, v in zip(t.columns, values))
        assert text == want  # read back one way: only text can hold ',' or be 'N'


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_equal_tables_verify_equal(mariadb: Any, spark: Any, synced: Path, engine: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Both Delta sides give the source's sums for every chunk of every column type: range
    chunks over an int and a (date, datetime, unsigned) key, hash buckets of a text key."""
    import binlake.spark.verify as lake_side
    import binlake.verify.lake as driver_side

    used: list[str] = []
    for name, mod in (("spark", lake_side), ("driver", driver_side.DriverLake)):
        real = getattr(mod, "checksums")
        monkeypatch.setattr(mod, "checksums", lambda *a, _r=real, _n=name: (
            used.append(_n), _r(*a))[1])
    planned: list[tuple[str, object]] = []
    real_bounds = driver_side.key_bounds
    monkeypatch.setattr(driver_side, "key_bounds", lambda path, t, *a: (
        lambda got: (planned.append((t.table, got)), got)[1])(real_bounds(path, t, *a)))
    report = verify(mariadb.url, FIXED, synced, chunk_size=7, spark=spark, wait=0,
                    engine=engine)
    assert set(used) == {engine}
    # with the driver, the range tables' boundaries come from the Delta keys (no walk)
    assert sorted(n for n, got in planned if got is not None) == (
        ["events", "types"] if engine == "driver" else [])
    by = {t.table: t for t in report.tables}
    assert report.equal, report.to_json()
    assert set(by) == {f"{DB}.types", f"{DB}.tags", f"{DB}.events"}
    assert (by[f"{DB}.types"].rows, by[f"{DB}.types"].lake_rows) == (5, 5)
    assert by[f"{DB}.events"].chunks == 9 and by[f"{DB}.events"].rows == 60
    assert by[f"{DB}.tags"].chunks == 6 and by[f"{DB}.tags"].lake_rows == 40


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_rows_changed_behind_binlakes_back_are_found(mariadb: Any, spark: Any, synced: Path,
                                                    tmp_path: Path, engine: str) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    lake = copy_lake(synced, tmp_path)
    types = DeltaTable(str(lake / DB / "types"))
    types.update(predicate="id = 2", updates={"v": "'tampered'", "d": "0.5"})
    types.delete("id = 3")
    tags = DeltaTable(str(lake / DB / "tags"))
    tags.delete("name = 'Tag3' AND n = 10")
    events = DeltaTable(str(lake / DB / "events"))
    schema = events.schema().to_arrow()
    extra = {f.name: [None] for f in schema}
    extra.update(day=[__import__("datetime").date(2024, 1, 3)],
                 at=[__import__("datetime").datetime(2024, 1, 1, 0, 0, 1, 500000)],
                 seq=[__import__("decimal").Decimal(999)],
                 amount=[__import__("decimal").Decimal("1.00")])
    write_deltalake(str(lake / DB / "events"), pa.table(extra, schema=pa.schema(schema)),
                    mode="append")

    report = verify(mariadb.url, FIXED, lake, chunk_size=7, spark=spark, wait=0, rounds=1,
                    engine=engine)
    assert not report.equal
    by = {t.table: t for t in report.tables}
    (changed, missing) = sorted(by[f"{DB}.types"].differences, key=lambda d: d.key["id"])
    assert (changed.key, changed.kind, changed.columns) == ({"id": "2"}, "changed", ["d", "v"])
    assert changed.source == {"d": "+-2p6004799503160661", "v": ""}
    assert changed.lake == {"d": "+-1p4503599627370496", "v": "tampered"}
    assert (missing.key, missing.kind) == ({"id": "3"}, "missing")
    (gone,) = by[f"{DB}.tags"].differences
    assert (gone.key, gone.kind) == ({"name": "Tag3", "n": "10"}, "missing")
    (added,) = by[f"{DB}.events"].differences
    assert added.kind == "extra"
    assert added.key == {"day": "2024-01-03", "at": "2024-01-01 00:00:01.500000", "seq": "999"}
    assert by[f"{DB}.events"].differing_chunks == 1


def test_cli_exit_status_and_json(mariadb: Any, spark: Any, synced: Path,
                                  tmp_path: Path) -> None:
    from click.testing import CliRunner
    from deltalake import DeltaTable

    from binlake.cli.program import main

    args = ["verify", mariadb.url, "--tables", f"{DB}.tags", "--wait", "0", "--chunk-size", "10"]
    ok = CliRunner().invoke(main, [*args, "--warehouse", str(synced)])
    assert ok.exit_code == 0, ok.output
    assert "verify_db.tags: equal  40 rows (Delta 40), 4 chunks, 0 differing" in ok.output
    lake = copy_lake(synced, tmp_path)
    DeltaTable(str(lake / DB / "tags")).update(predicate="n = 5", updates={"note": "NULL"})
    bad = CliRunner().invoke(main, [*args, "--warehouse", str(lake), "--json"])
    assert bad.exit_code == 1, bad.output
    out = json.loads(bad.output)
    assert out["equal"] is False
    (t,) = out["tables"]
    assert t["differences"] == [{"key": {"name": "Tag5", "n": "5"}, "kind": "changed",
                                 "columns": ["note"], "source": {"note": "n5"},
                                 "lake": {"note": None}}]
    missing = CliRunner().invoke(main, ["verify", mariadb.url, "--tables", f"{DB}.nope",
                                        "--warehouse", str(lake)])
    assert missing.exit_code == 2
    assert missing.output.strip().splitlines()[-1] == f"Error: no table matches '{DB}.nope' on " \
        f"mysql://{mariadb.url.split('://')[1].split(':')[0]}@127.0.0.1:{mariadb.port}"


def test_scd2_tables_compare_their_open_versions(mariadb: Any, spark: Any, synced: Path,
                                                 tmp_path: Path) -> None:
    """An SCD2 table (history rows with __START_AT/__END_AT): closed versions are history,
    only the open ones must equal the source."""
    from pyspark.sql import functions as F

    tags = spark.read.format("delta").load(str(synced / DB / "tags"))
    seq = F.col("_binlake_seq")
    current = tags.withColumn("__START_AT", seq) \
        .withColumn("__END_AT", F.lit(None).cast(tags.schema["_binlake_seq"].dataType)) \
        .drop("_binlake_seq", "_binlake_ts")
    old = current.where("n < 5").withColumn("note", F.lit("old")) \
        .withColumn("__END_AT", F.col("__START_AT"))
    lake = tmp_path / "lake"
    current.unionByName(old).write.format("delta").save(str(lake / DB / "tags"))
    report = verify(mariadb.url, f"{DB}.tags", lake, chunk_size=10, spark=spark, wait=0)
    assert report.equal, report.to_json()
    assert report.tables[0].lake_rows == 40


def test_rows_the_sync_changed_after_a_read_are_not_compared(mariadb: Any, spark: Any,
                                                             synced: Path,
                                                             tmp_path: Path) -> None:
    """The online rule: a source read at P, then changes the sync applies: the changed keys
    (newer seq, tombstones) differ from the read but are left out, the others compare."""
    from binlake.replica.url import ServerURL
    from binlake.spark.verify import lake_table
    from binlake.verify.progress import position_key
    from binlake.verify.source import Source

    lake = copy_lake(synced, tmp_path)
    src = Source(ServerURL.parse(mariadb.url))
    try:
        plan = src.plan(src.describe(DB, "moving"), 8)
        before = {}
        for chunk in plan.chunks:
            hashes, at = src.row_hashes(plan, chunk)
            before[chunk.index] = hashes
        mariadb.sql("UPDATE moving SET v = -1 WHERE id = 3", "DELETE FROM moving WHERE id = 12",
                    "INSERT INTO moving VALUES (7000, 1)", database=DB)
        apply_binlog(spark, mariadb, at, lake, 1)  # the sync applies past the read
        p = position_key(*at)
        table = lake_table(spark, str(lake), plan)
        now = table.row_hashes(before)
        differ = {k for i in before for k in before[i].keys() | now[i].keys()
                  if before[i].get(k) != now[i].get(k)}
        touched, truncated = table.touched_since(before, p)
        assert not truncated
        assert differ == touched == {"V1:3", "V2:12", "V4:7000"}
        report = verify(mariadb.url, f"{DB}.moving", lake, chunk_size=8, spark=spark, wait=0)
        assert report.equal and report.tables[0].rows == 20
    finally:
        src.close()
        mariadb.sql("UPDATE moving SET v = 3 WHERE id = 3", "INSERT INTO moving VALUES (12, 12)",
                    "DELETE FROM moving WHERE id = 7000", database=DB)


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_delta_job_runs_again_only_for_a_table_that_moved(mariadb: Any, spark: Any,
                                                         synced: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         engine: str) -> None:
    """A sync checkpoint behind the source reads makes the early Delta sums suspect; they
    are kept for a table with no new Delta version since, recomputed for one that has."""
    import binlake.verify.run as lake_side

    lake = copy_lake(synced, tmp_path)
    ckpt = lake / "_binlake" / "checkpoint"
    for d in ("offsets", "commits"):
        (ckpt / d).mkdir(parents=True)
    file = mariadb.binlog_end()[0]
    (ckpt / "offsets" / "0").write_text('v1\n{}\n' + json.dumps({"file": file, "pos": 4}) + "\n")
    (ckpt / "commits" / "0").write_text("v1\n{}\n")
    calls: list[int] = []
    real = lake_side._lake_sums

    def moving(lakes: Any, session: Any) -> Any:
        calls.append(len(lakes))
        out = real(lakes, session)
        if len(calls) == 1:  # a commit to `events` while the first job ran
            spark.sql(f"ALTER TABLE delta.`{lake / DB / 'events'}` "
                      "SET TBLPROPERTIES ('binlake.test' = 'moved')")
        return out

    monkeypatch.setattr(lake_side, "_lake_sums", moving)
    report = verify(mariadb.url, f"{DB}.types,{DB}.events", lake, chunk_size=7, spark=spark,
                    wait=0, engine=engine)
    assert report.equal, report.to_json()
    assert calls == [2, 1]  # both behind the reads; only `events` moved: read again


def test_equal_tables_verify_without_a_jvm(mariadb: Any, synced: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """On a local master the driver checksums the Delta tables: no Spark session starts
    unless a difference needs narrowing down."""
    import binlake.spark.session as session

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Spark session was started")

    monkeypatch.setattr(session, "build_session", refused)
    report = verify(mariadb.url, FIXED, synced, chunk_size=7, master="local[1]", wait=0)
    assert report.equal and len(report.tables) == 3, report.to_json()


def test_repair_applies_the_source_rows_again(mariadb: Any, spark: Any, synced: Path,
                                              tmp_path: Path) -> None:
    """--repair: a changed row, a deleted row and a row only in Delta are put back through
    the apply step (an upsert, an upsert, a delete with its tombstone); verify is then equal."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    lake = copy_lake(synced, tmp_path)
    path = str(lake / DB / "moving")
    table = DeltaTable(path)
    table.update(predicate="id = 4", updates={"v": "400"})
    table.delete("id = 5")
    schema = pa.schema(table.schema().to_arrow())
    row = {f.name: [None] for f in schema}
    row.update(id=[555], v=[5])
    write_deltalake(path, pa.table(row, schema=schema), mode="append")
    report = verify(mariadb.url, f"{DB}.moving", lake, chunk_size=8, spark=spark, wait=0,
                    rounds=1, repair=True)
    (t,) = report.tables
    assert report.equal and t.repaired == 3, report.to_json()
    rows = {r["id"]: r["v"] for r in spark.read.format("delta").load(path).collect()}
    assert rows == {i: i for i in range(20)}
    tomb = spark.read.format("delta").load(str(lake / "_binlake" / "tombstones" / DB / "moving"))
    assert [r["id"] for r in tomb.collect()] == [555]


@pytest.mark.slow
def test_no_false_difference_while_the_sync_runs(mariadb: Any, spark: Any,
                                                 tmp_path: Path) -> None:
    """Verify during a running sync with concurrent writes (updates, inserts, deletes, key
    moves): the rows changed after their chunk's read are left out, nothing is reported;
    once the writes stop, every row compares."""
    import random
    import threading
    import time

    from binlake.spark.sync import SyncOptions, run_sync
    from binlake.verify.progress import applied

    db = "verify_live"
    mariadb.sql(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}", database=None)
    mariadb.sql("CREATE TABLE live (id INT PRIMARY KEY, v INT, s VARCHAR(20))",
                "INSERT INTO live VALUES " + ",".join(f"({i}, {i}, 's{i}')" for i in range(200)),
                database=db)
    warehouse = tmp_path / "lake"
    opts = SyncOptions(url=mariadb.url, tables=f"{db}.*", warehouse=warehouse,
                       trigger_seconds=0.5, master="local[2]")
    failure: list[BaseException] = []

    def sync() -> None:
        try:
            run_sync(opts, spark=spark)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failure.append(exc)

    syncing = threading.Thread(target=sync, daemon=True)
    syncing.start()
    stop = threading.Event()

    def write() -> None:
        rng = random.Random(41)
        conn = mariadb.connect(database=db)
        with conn.cursor() as cur:
            n = 1000
            while not stop.is_set():
                k = rng.randrange(0, 300)
                op = rng.random()
                if op < 0.5:
                    cur.execute(f"UPDATE live SET v = v + 1, s = 'u{n}' WHERE id = {k}")
                elif op < 0.7:
                    cur.execute(f"INSERT IGNORE INTO live VALUES ({k}, {n}, 'i{n}')")
                elif op < 0.85:
                    cur.execute(f"DELETE FROM live WHERE id = {k}")
                else:
                    cur.execute(f"UPDATE IGNORE live SET id = {300 + n} WHERE id = {k}")
                n += 1
                time.sleep(0.01)
        conn.close()

    try:
        deadline = time.monotonic() + 120
        while applied(warehouse)[0] is None:  # the stream's first batch is committed
            assert not failure and time.monotonic() < deadline, failure
            time.sleep(0.5)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        reports: list[Any] = []
        # rounds until one saw writes land between its source reads and its Delta read
        while len(reports) < 6 and not any(r.tables[0].differing_chunks for r in reports):
            reports.append(verify(mariadb.url, f"{db}.live", warehouse, chunk_size=40,
                                  spark=spark, wait=30))
        stop.set()
        writer.join()
        for report in reports:
            assert report.equal, report.to_json()
        assert sum(r.tables[0].differing_chunks for r in reports) > 0  # the writes were seen
        final = verify(mariadb.url, f"{db}.live", warehouse, chunk_size=40, spark=spark,
                       wait=30)
        assert final.equal and final.tables[0].changed_while_verifying == 0, final.to_json()
        assert not failure, failure
    finally:
        stop.set()
        for q in spark.streams.active:
            q.stop()
        syncing.join(timeout=60)
