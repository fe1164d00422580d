"""The sync's direct snapshot: rows typed in Python as Arrow give the values the apply step's
JSON typing gives, for every type the snapshot reads, and the tables it writes equal the
source."""
from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.snapshot.chunks import read_chunk
from binlake.snapshot.plan import plan_snapshot
from binlake.snapshot.values import RowFormatter
from binlake.spark.snapshot_rows import (
    AFTER_COL, ChunkTyper, arrow_schema, chunk_schema, typed_table,
)

pytestmark = pytest.mark.spark

DB = "binlake_test"
TYPES = (
    "CREATE TABLE {name} (id INT PRIMARY KEY, ti TINYINT, ui BIGINT UNSIGNED, f FLOAT, "
    "d DOUBLE, dc DECIMAL(30,4), big DECIMAL(50,2), b BIT(5), b64 BIT(64), y YEAR, "
    "bn BINARY(4), vb VARBINARY(10), bl BLOB, e ENUM('a','b'), st SET('x','y','z'), "
    "ts TIMESTAMP(3) NULL, dt DATETIME(2), t TIME(1), j JSON, g GEOMETRY, dz DATE, c CHAR(5), "
    "v VARCHAR(20), tx TEXT, uti TINYINT UNSIGNED, ui32 INT UNSIGNED, y0 DATETIME)")
ROWS = (
    "INSERT INTO {name} VALUES "
    "(1, -5, 18446744073709551615, 3.40282e38, 0.1e0 + 0.2e0, '-12.5000', "
    "'123456789012345678901234567890123456789012345.67', b'101', b'1111111111111111111111111111111111111111111111111111111111111111', "
    "0, 'ab', x'00ff', x'010203', 'b', 'x,z', '2024-01-02 03:04:05.123', "
    "'0000-00-00 00:00:00', '-838:59:59.9', '{{\"a\": 1,  \"b\": [1.50, 2]}}', "
    "ST_GeomFromText('POINT(1 2)', 4326), '2024-02-00', 'ab ', 'tab\\t\"q\" é', 'long ✓', "
    "255, 4294967295, '0000-01-01 00:00:00'), "
    "(2, 127, 0, 16777217, 1e0 / 3e0, 0, 0, b'0', b'0', 2155, 'ab\\0\\0', '', '', '', '', NULL, "
    "'9999-12-31 23:59:59.99', '12:00:00', '[]', NULL, '0000-00-00', '', '', NULL, 0, 0, NULL), "
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "'1970-01-01 00:00:01', '1000-01-01 00:00:00', '00:00:00', '\"s\"', "
    "ST_GeomFromText('LINESTRING(0 0,1 1)'), '1000-01-01', NULL, NULL, '', NULL, NULL, "
    "'2024-02-29 23:59:59')")


@pytest.fixture
def types_table(mariadb: Any) -> str:
    name = "snap_rows_types"
    mariadb.sql(f"DROP TABLE IF EXISTS {name}", TYPES.format(name=name),
                "SET SESSION sql_mode = ''", ROWS.format(name=name))
    return name


def _typed(spark: Any, res: Any, zero_dates: str) -> tuple[list[tuple[Any, ...]], int]:
    chunk = res.chunk
    schema = chunk_schema(chunk, zero_dates)
    import pyarrow as pa

    table = pa.Table.from_batches(list(ChunkTyper(chunk, zero_dates, arrow_schema(schema))
                                       .batches(res)))
    df = spark.createDataFrame(table, schema=schema)
    cols = chunk.table.spec.names
    json_rows = df.where(df[AFTER_COL].isNotNull()).count()
    from pyspark.sql import functions as F

    # As JSON text in Spark: year-0 timestamps have no Python value to collect into.
    typed = df.select(*typed_table(df, chunk, cols, zero_dates))
    got = typed.select(F.col("id"), F.to_json(F.struct(*typed.columns)).alias("j")).collect()
    return sorted((r["id"], r["j"]) for r in got), json_rows


@pytest.mark.parametrize("zero_dates", ["null", "string"])
def test_typed_rows_equal_the_json_typing(spark: Any, mariadb: Any, types_table: str,
                                          zero_dates: str) -> None:
    """The same chunk typed twice: SELECT values typed in Python (a backfilled row as JSON),
    and every row as its JSON image typed by `typed_value`: the values are equal."""
    (chunk,) = plan_snapshot(mariadb.url, f"{DB}.{types_table}")

    def writes() -> None:  # into the chunk's window: these rows come from the backfill
        mariadb.sql(f"UPDATE {types_table} SET v = 'upd', dc = 1.5 WHERE id = 2",
                    f"INSERT INTO {types_table} (id, dt, ts) "
                    "VALUES (4, '2001-02-03 04:05:06.07', '2001-02-03 04:05:06.789')")

    res = read_chunk(mariadb.url, chunk, server_id=6449301, after_select=writes, raw=True)
    assert sum(isinstance(v, str) for v in res.rows.values()) == 2  # rows 2 and 4
    typed, json_rows = _typed(spark, res, zero_dates)
    # Rows 2 and 4 (backfilled) go as JSON, and so does row 1 when its temporals are typed
    # (year 0: Python has no such date); as text ("string") they need no decision.
    assert json_rows == (3 if zero_dates == "null" else 2)
    fmt = RowFormatter(chunk.table)
    as_json = replace(res, rows={k: v if isinstance(v, str) else fmt.image(v)[1]
                                 for k, v in res.rows.items()})
    reference, all_json = _typed(spark, as_json, zero_dates)
    assert all_json == 4
    assert typed == reference
    assert [r[0] for r in typed] == [1, 2, 3, 4]
    if zero_dates == "null":
        assert '"y0":"0000-01-01T00:00:00' in typed[0][1]  # year 0, typed by Spark


def test_sync_snapshot_writes_each_table_once(spark: Any, mariadb: Any, types_table: str,
                                              tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """`binlake sync`'s first snapshot takes the direct way: one commit per table (the txn
    of the snapshot attempt), its rows equal to the source's; without a terminal its
    progress and the catch-up's are log lines."""
    import logging

    from binlake.spark.sync import SyncOptions, run_sync

    wh = tmp_path / "wh"
    with caplog.at_level(logging.INFO, logger="binlake.sync"):
        rep = run_sync(SyncOptions(url=mariadb.url, tables=f"{DB}.{types_table}",
                                   warehouse=wh, once=True), spark)
    assert rep.snapshot_rows == 3
    done = {r.getMessage(): vars(r) for r in caplog.records if r.getMessage().endswith(" done")}
    snap = done["snapshot done"]
    assert (snap["meter"], snap["done"], snap["total"]) == (f"{DB}.{types_table}", 3, 3)
    assert done["catch-up done"]["unit"] == "changes"  # the last of the catch-up's meters
    path = str(wh / DB / types_table)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert [h["operation"] for h in history] == ["WRITE"]
    got = spark.read.format("delta").load(path)
    assert sorted(r["id"] for r in got.select("id").collect()) == [1, 2, 3]
    row = got.where("id = 1").select("ui", "dc", "b64", "dt", "dz", "j").first()
    assert (int(row["ui"]), str(row["dc"]), int(row["b64"])) == (
        18446744073709551615, "-12.5000", 2**64 - 1)
    assert row["dt"] is None and row["dz"] is None  # zero dates: NULL (policy "null")
    assert row["j"] == '{"a": 1,  "b": [1.50, 2]}'


@pytest.mark.parametrize("zero_dates", ["null", "string"])
def test_packed_read_types_like_the_row_read(mariadb: Any, types_table: str,
                                             zero_dates: str) -> None:
    """The chunk read on binlake's client, split into columns (C core and its Python twin)
    and typed by Arrow casts gives the Arrow batches the PyMySQL rows typed in Python give:
    in one batch, and in batches of two rows, where the year-0 row makes its batch fall
    back to the Python typing."""
    import pyarrow as pa

    from binlake._speedups.native import switches

    (chunk,) = plan_snapshot(mariadb.url, f"{DB}.{types_table}")
    arrow = arrow_schema(chunk_schema(chunk, zero_dates))
    mariadb.sql(f"INSERT INTO {types_table} (id, dt, dz, b) VALUES "
                "(5, '2020-05-06 07:08:09.5', '2020-05-06', b'11')")
    raw = read_chunk(mariadb.url, chunk, server_id=6449302, raw=True)
    packed = read_chunk(mariadb.url, chunk, server_id=6449303, raw=True, packed=True)
    assert packed.packed is not None and packed.packed.count == 4 and not packed.rows
    packed.ts = raw.ts  # (read a second apart: the chunk's timestamp may differ)

    def table(res: Any, size: int) -> Any:
        typer = ChunkTyper(chunk, zero_dates, arrow)
        return pa.Table.from_batches(list(typer.batches(res, size)), schema=arrow)

    for size in (10_000, 2):
        want = table(raw, size)
        assert table(packed, size).equals(want)
        with switches.set(c=None):
            assert table(packed, size).equals(want)
    json_rows = table(packed, 10_000).column(AFTER_COL).null_count
    assert json_rows == (3 if zero_dates == "null" else 4)  # year 0: the batch in Python


def test_packed_read_names_a_text_value_that_is_not_utf8(mariadb: Any,
                                                         types_table: str) -> None:
    """A text value whose bytes are not UTF-8 (one byte of the row's 'é' broken in the
    packed rows) stops the read with one line naming the table, chunk, row and column, in
    the C split and its Python twin."""
    from binlake._speedups.native import switches
    from binlake.snapshot.server import SnapshotError

    (chunk,) = plan_snapshot(mariadb.url, f"{DB}.{types_table}")
    arrow = arrow_schema(chunk_schema(chunk, "null"))
    res = read_chunk(mariadb.url, chunk, server_id=6449305, raw=True, packed=True)
    assert res.packed is not None
    at = res.packed.data.index("é".encode())
    res.packed.data[at] = 0xFF
    for pure in (False, True):
        with switches.set(c=None) if pure else contextlib.nullcontext():
            with pytest.raises(SnapshotError) as err:
                list(ChunkTyper(chunk, "null", arrow).batches(res))
        text = str(err.value)
        assert f"{DB}.{types_table} chunk 0, row 0: column v holds bytes that are not UTF-8" \
            in text, text
        assert "\n" not in text


def test_packed_read_with_a_backfill_keeps_the_rows_path(mariadb: Any, types_table: str) -> None:
    """Changes in the chunk's window: the packed read replays them like the row read, onto
    the same raw values."""
    (chunk,) = plan_snapshot(mariadb.url, f"{DB}.{types_table}")

    def writes() -> None:
        mariadb.sql(f"UPDATE {types_table} SET v = 'upd' WHERE id = 2",
                    f"DELETE FROM {types_table} WHERE id = 3")

    res = read_chunk(mariadb.url, chunk, server_id=6449304, after_select=writes, raw=True,
                     packed=True)
    assert res.packed is None and res.backfilled == 2
    assert sorted(res.rows) == [(1,), (2,)]
    assert isinstance(res.rows[(2,)], str) and '"v":"upd"' in res.rows[(2,)]
    first = res.rows[(1,)]
    assert first[0] == "1" and first[7] == b"\x05" and first[10] == b"ab\x00\x00"


def test_packed_read_keeps_its_rows_when_only_other_tables_change(mariadb: Any,
                                                                  types_table: str) -> None:
    """Writes to another table in the chunk's window move HIGH past LOW, but no change of
    this table is there to replay: the rows stay packed and type as the quiet read's do."""
    import pyarrow as pa

    (chunk,) = plan_snapshot(mariadb.url, f"{DB}.{types_table}")
    arrow = arrow_schema(chunk_schema(chunk, "null"))
    mariadb.sql("CREATE TABLE IF NOT EXISTS snap_rows_other (id INT PRIMARY KEY, v INT)")

    def writes() -> None:
        mariadb.sql("REPLACE INTO snap_rows_other VALUES (1, 1), (2, 2)")

    quiet = read_chunk(mariadb.url, chunk, server_id=6449306, raw=True, packed=True)
    busy = read_chunk(mariadb.url, chunk, server_id=6449307, after_select=writes, raw=True,
                      packed=True)
    assert busy.low != busy.high and busy.backfilled == 0
    assert busy.packed is not None and not busy.rows
    busy.ts = quiet.ts

    def table(res: Any) -> Any:
        typer = ChunkTyper(chunk, "null", arrow)
        return pa.Table.from_batches(list(typer.batches(res)), schema=arrow)

    want = table(quiet)
    got = table(busy)
    # (seq holds each read's HIGH: compare the table's columns)
    assert got.select(list(range(len(chunk.table.spec.columns)))).equals(
        want.select(list(range(len(chunk.table.spec.columns)))))


def test_driver_and_spark_writers_write_the_same_tables(spark: Any, mariadb: Any,
                                                        types_table: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The snapshot written by the driver (delta-rs, the next chunk read while one is
    written, the year-0 row typed by Spark) and by Spark's tasks: the same schema and
    values, one WRITE commit carrying the snapshot's txn, and the same empty tombstone
    table beside. Declined rows are typed as soon as they pass `BATCH_BYTES` (1 here)."""
    import json as jsonlib

    from binlake.spark import snapshot_rows

    monkeypatch.setattr(snapshot_rows, "BATCH_BYTES", 1)

    from pyspark.sql import functions as F

    from binlake.spark.sync import SyncOptions, run_sync
    from binlake.spark.tables import tombstone_path

    got = {}
    for writer in ("driver", "spark"):
        wh = tmp_path / writer
        rep = run_sync(SyncOptions(url=mariadb.url, tables=f"{DB}.{types_table}",
                                   warehouse=wh, once=True, chunk_size=2,
                                   writer=writer), spark)
        assert rep.snapshot_rows == 3
        path = wh / DB / types_table
        df = spark.read.format("delta").load(str(path))
        data = [c for c in df.columns if not c.startswith("_binlake")]
        rows = df.select(F.col("id"), F.to_json(F.struct(*data)).alias("j"),
                         F.col("_binlake_seq.row").alias("r")).collect()
        assert all(r["r"] is not None for r in rows)
        commits = [jsonlib.loads(line) for line in
                   (path / "_delta_log" / "00000000000000000000.json").read_text().splitlines()]
        engine = next(c["commitInfo"] for c in commits if "commitInfo" in c)
        txn = [c["txn"] for c in commits if "txn" in c]
        assert [t["version"] for t in txn] == [0] and txn[0]["appId"].endswith("-snapshot-0")
        assert ("delta-rs" in jsonlib.dumps(engine)) == (writer == "driver")
        tomb = spark.read.format("delta").load(tombstone_path(str(wh), DB, types_table))
        assert tomb.count() == 0
        got[writer] = (df.schema, sorted((r["id"], r["j"]) for r in rows), tomb.schema)
    assert got["driver"][0] == got["spark"][0]
    assert got["driver"][2] == got["spark"][2]
    assert got["driver"][1] == got["spark"][1]
    assert '"y0":"0000-01-01T00:00:00' in got["driver"][1][0][1]  # typed by Spark
