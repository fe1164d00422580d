"""`binlake sync` of MariaDB's UUID, INET6 and INET4 columns: Delta string columns holding the
server's text (SELECT CAST(col AS CHAR)), for rows the snapshot read and for rows the binlog
stream brought (inserts, an update, a delete), NULLs included; and a snapshot chunk's SELECT
text equal to its catch-up's binlog images."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import json

import pytest

pytest.importorskip("pyspark")

from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from binlake.spark import snapshot as S
from binlake.snapshot.chunks import ShapeGuard
from binlake.cdc.arrow import iter_cdc_batches
from binlake.spark.sync import SyncOptions, run_sync

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "fbt_sync"


def _server_texts(server: Any) -> dict[int, tuple[Any, ...]]:
    rows = server.sql("SELECT id, CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR) FROM t",
                      database=DB)
    return {int(r[0]): tuple(r[1:]) for r in rows}


def test_sync_lands_uuid_and_inet_as_the_servers_text(spark: Any, mariadb: Any,
                                                      tmp_path: Path) -> None:
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", database=None)
    mariadb.sql("CREATE TABLE t (id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)",
                "INSERT INTO t VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '::1', "
                "'192.0.2.1'), (2, NULL, NULL, NULL), "
                "(3, '6ccd780c-baba-1026-9564-5b8c656024d0', '::ffff:192.0.2.128', '0.0.0.0')",
                database=DB)
    warehouse = tmp_path / "wh"
    opts = SyncOptions(url=mariadb.url, tables=f"{DB}.t", warehouse=warehouse, once=True)
    first = run_sync(opts, spark=spark)
    assert first.snapshot_rows == 3
    mariadb.sql("INSERT INTO t VALUES (4, '00000000-0000-0000-0000-000000000000', '1::', "
                "'255.255.255.255'), (5, NULL, '2001:db8::ff00:42:8329', NULL)",
                "UPDATE t SET u = 'ffffffff-ffff-7fff-bfff-ffffffffffff', i6 = 'fe80::1:2:3:4', "
                "i4 = NULL WHERE id = 2", "DELETE FROM t WHERE id = 3", database=DB)
    second = run_sync(opts, spark=spark)
    assert second.rows >= 4

    df = spark.read.format("delta").load(str(warehouse / DB / "t"))
    types = {f.name: f.dataType.typeName() for f in df.schema.fields}
    assert (types["u"], types["i6"], types["i4"]) == ("string",) * 3
    got = {r["id"]: (r["u"], r["i6"], r["i4"]) for r in df.select("id", "u", "i6", "i4").collect()}
    want = _server_texts(mariadb)
    assert got == want
    assert got[1] == ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "::1", "192.0.2.1")  # snapshot
    assert got[4] == ("00000000-0000-0000-0000-000000000000", "1::", "255.255.255.255")  # stream


def test_snapshot_images_equal_the_backfills_binlog_images(mariadb: Any) -> None:
    """A chunk's SELECT text and the images its catch-up decodes from the binlog (through the
    snapshot's own shape guard, not the schema history) are the same bytes."""
    mariadb.sql(f"CREATE DATABASE IF NOT EXISTS {DB}", database=None)
    mariadb.sql("DROP TABLE IF EXISTS g",
                "CREATE TABLE g (id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)", database=DB)
    start = mariadb.binlog_end()
    mariadb.sql("INSERT INTO g VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
                "'::ffff:192.0.2.128', '192.0.2.1'), (2, NULL, '1::', NULL), "
                "(3, '00000000-0000-0000-0000-000000000000', '::', '0.0.0.0')", database=DB)
    (chunk,) = S.plan_snapshot(mariadb.url, f"{DB}.g")
    res = S.read_chunk(mariadb.url, chunk, server_id=6449011)
    stream = BinlogStream(ServerURL.parse(mariadb.url), StreamOptions(
        start=Position(*start), until_end=True, server_id=6449012,
        tables=lambda s, t: (s, t) == (DB, "g"), table_resolver=ShapeGuard(chunk.table)))
    binlog = {json.loads(r["after"])["id"]: r["after"]
              for b in iter_cdc_batches(stream.changes()) for r in b.to_pylist()}
    assert {k[0]: v for k, v in res.rows.items()} == binlog
    assert json.loads(binlog[1])["i6"] == "::ffff:192.0.2.128"
