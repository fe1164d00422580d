"""The chunked initial snapshot: consistent with the binlog while a writer keeps writing.

The proof of exactness is the one the apply step relies on: snapshot rows plus the binlog
from the snapshot's stream-start position, merged per key by seq (deletes as tombstones),
equal the source table at the end, row by row and byte by byte.
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from typing import Any, Iterator

import pytest

pytest.importorskip("pyspark")

from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from binlake.snapshot.chunks import ShapeGuard, read_chunk
from binlake.snapshot.plan import plan_snapshot
from binlake.snapshot.server import SnapshotError, connect
from binlake.snapshot.tables import describe_table
from binlake.snapshot.values import RowFormatter
from binlake.snapshot.watermarks import ROW_OP, SnapshotWatermarks
from binlake.spark.snapshot import NAME, SnapshotDataSource, read_snapshot
from binlake.cdc.arrow import iter_cdc_batches

pytestmark = pytest.mark.spark

DB = "binlake_test"
INT_ROWS = 4000
COMPOSITE_ROWS = 2000
NOKEY_ROWS = 1200
CHUNKS = 6


# -- helpers -----------------------------------------------------------------------------------


def table_state(url: str, table: str, key: tuple[str, ...] | None = None
                ) -> dict[tuple[Any, ...], str] | Counter[str]:
    """The table now, as JSON images formatted like the snapshot (and the binlog path)."""
    u = ServerURL.parse(url)
    conn = connect(u)
    try:
        with conn.cursor() as cur:
            t = describe_table(cur, DB, table, key)
            fmt = RowFormatter(t)
            cur.execute(f"SELECT {fmt.select_list} FROM `{DB}`.`{table}`")
            images = [fmt.image(r) for r in cur.fetchall()]
    finally:
        conn.close()
    if not t.key:
        return Counter(text for _, text in images)
    return {k: text for k, text in images}


def binlog_rows(url: str, start: Position, table: str) -> list[dict[str, Any]]:
    """The table's change records from `start` to the current end, as CDC rows."""
    stream = BinlogStream(ServerURL.parse(url), StreamOptions(
        start=start, until_end=True, server_id=6449001,
        tables=lambda s, t: (s, t) == (DB, table)))
    return [r for b in iter_cdc_batches(stream.changes()) for r in b.to_pylist()]


def seq_of(row: dict[str, Any]) -> tuple[int, int, int, int]:
    s = row["seq"]
    return (s["file_index"], s["pos"], s["inner"], s["row"])


def key_events(row: dict[str, Any], key: tuple[str, ...]
               ) -> list[tuple[tuple[Any, ...], tuple[int, ...], str | None]]:
    """One change -> (key, seq, after image or None for a delete); key moves split in two."""
    op, seq = row["op"], seq_of(row)
    if op not in ("insert", "update", "delete"):
        raise AssertionError(f"unexpected {op} record in the test binlog")
    before = json.loads(row["before"]) if row["before"] else None
    after = json.loads(row["after"]) if row["after"] else None
    out: list[tuple[tuple[Any, ...], tuple[int, ...], str | None]] = []
    if before is not None:
        kb = tuple(before[k] for k in key)
        if after is None or kb != tuple(after[k] for k in key):
            out.append((kb, seq, None))
    if after is not None:
        out.append((tuple(after[k] for k in key), seq, row["after"]))
    return out


def snapshot_rows(rows: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["table"] == table and r["op"] == ROW_OP]


def apply_max_seq(snap: list[dict[str, Any]], changes: list[dict[str, Any]],
                  key: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    """The apply step's rule: per key the highest seq wins, a delete is a tombstone."""
    best: dict[tuple[Any, ...], tuple[tuple[int, ...], str | None]] = {}
    events = [(tuple(json.loads(r["after"])[k] for k in key), seq_of(r), r["after"]) for r in snap]
    for row in changes:
        events.extend(key_events(row, key))
    random.Random(7).shuffle(events)  # the order must not matter
    for k, seq, image in events:
        if k not in best or seq > best[k][0]:
            best[k] = (seq, image)
    return {k: image for k, (seq, image) in best.items() if image is not None}


def apply_filtered(snap: list[dict[str, Any]], changes: list[dict[str, Any]],
                   key: tuple[str, ...], wm: SnapshotWatermarks, table: str
                   ) -> tuple[dict[tuple[Any, ...], str], int]:
    """DBLog order: snapshot first, then the stream in order, dropping covered key changes."""
    state = {tuple(json.loads(r["after"])[k] for k in key): r["after"] for r in snap}
    skipped = 0
    for row in sorted(changes, key=seq_of):
        for k, seq, image in key_events(row, key):
            if wm.covered(DB, table, dict(zip(key, k)), seq):
                skipped += 1
                continue
            if image is None:
                state.pop(k, None)
            else:
                state[k] = image
    return state, skipped


class Writer(threading.Thread):
    """Bounded random inserts, updates, deletes, key moves and multi-row transactions."""

    def __init__(self, server: Any, rate: float = 250.0, max_seconds: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.rate = rate
        self.max_seconds = max_seconds
        self.ops = 0
        self.stop_flag = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        rnd = random.Random(42)
        conn = self.server.connect()
        deadline = time.monotonic() + self.max_seconds
        try:
            with conn.cursor() as cur:
                while not self.stop_flag.is_set() and time.monotonic() < deadline:
                    self.step(cur, rnd)
                    self.ops += 1
                    time.sleep(1 / self.rate)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            conn.close()

    def step(self, cur: Any, rnd: random.Random) -> None:
        i = rnd.randrange(-300, INT_ROWS + 600)
        a, b = rnd.randrange(0, 60), rnd.randrange(0, 60)
        word = rnd.choice(["x", "yy", "zzz", "é✓", "tab\t"])
        choice = rnd.random()
        if choice < 0.18:
            cur.execute(f"INSERT IGNORE INTO {DB}.snap_int VALUES (%s, %s, %s, %s, NOW(3))",
                        (i, rnd.randrange(1000), word, f"{rnd.randrange(10**6)}.{i % 100:02d}"))
        elif choice < 0.36:
            cur.execute(f"UPDATE {DB}.snap_int SET a = a + 1, b = %s, d = NOW(3) WHERE id = %s",
                        (word, i))
        elif choice < 0.48:
            cur.execute(f"DELETE FROM {DB}.snap_int WHERE id = %s", (i,))
        elif choice < 0.56:
            cur.execute(f"UPDATE IGNORE {DB}.snap_int SET id = %s WHERE id = %s",
                        (rnd.randrange(-300, INT_ROWS + 600), i))
        elif choice < 0.62:
            cur.execute("BEGIN")
            cur.execute(f"UPDATE {DB}.snap_int SET a = a - 1 WHERE id BETWEEN %s AND %s",
                        (i, i + 4))
            cur.execute(f"DELETE FROM {DB}.snap_int WHERE id = %s", (i + 7,))
            cur.execute(f"INSERT IGNORE INTO {DB}.snap_int VALUES (%s, 1, 'tx', 1.00, NOW(3))",
                        (i + 9,))
            cur.execute("COMMIT")
        elif choice < 0.72:
            cur.execute(f"INSERT IGNORE INTO {DB}.snap_comp VALUES (%s, %s, %s)", (a, b, word))
        elif choice < 0.80:
            cur.execute(f"UPDATE {DB}.snap_comp SET v = %s WHERE a = %s AND b = %s", (word, a, b))
        elif choice < 0.85:
            cur.execute(f"DELETE FROM {DB}.snap_comp WHERE a = %s AND b = %s", (a, b))
        elif choice < 0.89:
            cur.execute(f"UPDATE IGNORE {DB}.snap_comp SET a = %s, b = %s WHERE a = %s AND b = %s",
                        (rnd.randrange(0, 60), rnd.randrange(0, 60), a, b))
        elif choice < 0.94:
            cur.execute(f"INSERT INTO {DB}.snap_nokey VALUES (%s, %s)", (a, word))
        elif choice < 0.97:
            cur.execute(f"DELETE FROM {DB}.snap_nokey WHERE a = %s LIMIT 1", (a,))
        else:
            cur.execute(f"UPDATE {DB}.snap_nokey SET b = %s WHERE a = %s LIMIT 1", (word, a))


# -- the concurrent snapshot (one Spark job for three tables) -----------------------------------

@pytest.fixture(scope="module")
def concurrent(spark: Any, mariadb: Any) -> Iterator[dict[str, Any]]:
    spark.dataSource.register(SnapshotDataSource)
    mariadb.sql(
        "DROP TABLE IF EXISTS snap_int, snap_comp, snap_nokey",
        "CREATE TABLE snap_int (id INT PRIMARY KEY, a INT, b VARCHAR(32), c DECIMAL(10,2), "
        "d DATETIME(3)) ENGINE=InnoDB",
        "CREATE TABLE snap_comp (a INT, b INT, v VARCHAR(20), PRIMARY KEY (a, b)) ENGINE=InnoDB",
        "CREATE TABLE snap_nokey (a INT, b VARCHAR(20)) ENGINE=InnoDB",
        # keys with gaps (only even ids) so later inserts land inside chunks too
        "INSERT INTO snap_int SELECT seq * 2, seq MOD 97, CONCAT('r', seq), seq / 8, "
        f"'2024-01-01 00:00:00.125' + INTERVAL seq SECOND FROM seq_0_to_{INT_ROWS - 1}",
        "INSERT INTO snap_comp SELECT seq DIV 40, (seq MOD 40) * 2, CONCAT('v', seq) "
        f"FROM seq_0_to_{COMPOSITE_ROWS - 1}",
        "INSERT INTO snap_nokey SELECT seq MOD 50, CONCAT('n', seq MOD 7) "
        f"FROM seq_0_to_{NOKEY_ROWS - 1}",
    )
    writer = Writer(mariadb)
    writer.start()
    while writer.ops < 30 and writer.is_alive():
        time.sleep(0.05)
    ops_before = writer.ops
    t0 = time.monotonic()
    df, wm = read_snapshot(spark, mariadb.url, f"{DB}.snap_int,{DB}.snap_comp,{DB}.snap_nokey",
                             chunks=CHUNKS)
    seconds = time.monotonic() - t0
    ops_during = writer.ops - ops_before
    time.sleep(0.3)  # a few changes after the last HIGH too
    writer.stop_flag.set()
    writer.join(10)
    assert writer.error is None, writer.error
    rows = [r.asDict(recursive=True) for r in df.collect()]
    yield {"rows": rows, "wm": wm, "ops_during": ops_during, "seconds": seconds,
           "url": mariadb.url}


def test_concurrent_writer_int_key(concurrent: dict[str, Any]) -> None:
    wm: SnapshotWatermarks = concurrent["wm"]
    url = concurrent["url"]
    assert concurrent["ops_during"] > 20, "the writer must run during the snapshot"
    chunks = wm.chunks_of(DB, "snap_int")
    assert [c.index for c in chunks] == list(range(CHUNKS))
    assert chunks[0].lo is None and chunks[-1].hi is None
    assert all(chunks[i].hi == chunks[i + 1].lo for i in range(CHUNKS - 1))
    assert all(c.low <= c.high or c.low[0] < c.high[0] for c in chunks)
    assert len({c.high for c in wm.chunks}) > 1, "chunks should end at different HIGHs"
    start = (wm.stream_start.file, wm.stream_start.pos)
    assert start == min((c.high for c in wm.chunks), key=lambda h: (h[0], h[1]))
    assert wm.stream_start.gtid_state  # MariaDB: the stream can start by GTID too

    key = ("id",)
    snap = snapshot_rows(concurrent["rows"], "snap_int")
    assert sum(c.rows for c in chunks) == len(snap)
    assert len({tuple(r["seq"].values()) for r in snap}) == len(snap)  # seq unique per table
    changes = binlog_rows(url, wm.stream_start, "snap_int")
    final = table_state(url, "snap_int")
    assert len(final) > INT_ROWS // 2
    merged = apply_max_seq(snap, changes, key)
    assert merged == final
    filtered, skipped = apply_filtered(snap, changes, key, wm, "snap_int")
    assert filtered == final
    print(f"\nsnapshot {concurrent['seconds']:.1f}s, writer ops during it "
          f"{concurrent['ops_during']}, backfilled per chunk {[c.backfilled for c in chunks]}, "
          f"stream changes {len(changes)} ({skipped} key changes covered by the snapshot)")


def test_concurrent_writer_composite_key(concurrent: dict[str, Any]) -> None:
    wm: SnapshotWatermarks = concurrent["wm"]
    chunks = wm.chunks_of(DB, "snap_comp")
    assert len(chunks) == CHUNKS and all(c.key == ("a", "b") for c in chunks)
    assert all(set(c.hi) == {"a", "b"} for c in chunks[:-1])
    key = ("a", "b")
    snap = snapshot_rows(concurrent["rows"], "snap_comp")
    changes = binlog_rows(concurrent["url"], wm.stream_start, "snap_comp")
    final = table_state(concurrent["url"], "snap_comp")
    assert apply_max_seq(snap, changes, key) == final
    assert apply_filtered(snap, changes, key, wm, "snap_comp")[0] == final


def test_no_primary_key_policy_full_read(concurrent: dict[str, Any]) -> None:
    """No key: one chunk read in one consistent snapshot at an exact position (LOW = HIGH,
    no backfill); the binlog after it, applied as a multiset, gives the table."""
    wm: SnapshotWatermarks = concurrent["wm"]
    (c,) = wm.chunks_of(DB, "snap_nokey")
    assert (c.mode, c.key, c.count, c.low, c.backfilled) == ("full", (), 1, c.high, 0)
    bag = Counter(r["after"] for r in snapshot_rows(concurrent["rows"], "snap_nokey"))
    assert sum(bag.values()) == c.rows
    applied = 0
    for row in sorted(binlog_rows(concurrent["url"], wm.stream_start, "snap_nokey"), key=seq_of):
        if wm.covered(DB, "snap_nokey", None, seq_of(row)):
            continue  # without a key the table-level HW filter is required
        applied += 1
        if row["before"] is not None:
            assert bag[row["before"]] > 0, "a change removes a row the snapshot does not have"
            bag[row["before"]] -= 1
        if row["after"] is not None:
            bag[row["after"]] += 1
    assert +bag == table_state(concurrent["url"], "snap_nokey")


def test_chunk_count_is_the_number_of_partitions(spark: Any, concurrent: dict[str, Any]) -> None:
    df = (spark.read.format(NAME).option("url", concurrent["url"])
          .option("tables", f"{DB}.snap_int").option("chunks", 4).load())
    assert df.rdd.getNumPartitions() == 4


# -- single chunks without Spark --------------------------------------------------------------

@pytest.fixture
def url(mariadb: Any) -> str:
    return mariadb.url


def _fresh_int_table(server: Any, name: str, rows: int = 1000) -> None:
    server.sql(f"DROP TABLE IF EXISTS {name}",
               f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
               f"INSERT INTO {name} SELECT seq * 2, CONCAT('v', seq), seq FROM seq_0_to_{rows - 1}")


def test_backfill_reconciles_changes_between_low_and_high(mariadb: Any, url: str) -> None:
    """Writes between the SELECT and HIGH: inserts, updates, deletes and key moves in and out
    of the chunk end up in it exactly as the table has them at HIGH."""
    _fresh_int_table(mariadb, "snap_window")
    plan = plan_snapshot(url, f"{DB}.snap_window", chunks=4)
    assert [c.index for c in plan] == [0, 1, 2, 3]
    c = plan[1]
    lo, hi = c.lo[0], c.hi[0]

    def writes() -> None:
        mariadb.sql(
            f"INSERT INTO snap_window VALUES ({lo + 1}, 'new-in', 0), ({hi + 1}, 'new-out', 0)",
            f"UPDATE snap_window SET v = 'upd' WHERE id = {lo + 2}",
            f"DELETE FROM snap_window WHERE id = {lo + 4}",
            f"UPDATE snap_window SET id = {hi + 3} WHERE id = {lo + 6}",   # moves out
            f"UPDATE snap_window SET id = {lo + 7} WHERE id = {hi + 4}",   # moves in
            f"INSERT INTO snap_window VALUES ({lo + 9}, 'short', 0)",
            f"DELETE FROM snap_window WHERE id = {lo + 9}",
            f"UPDATE snap_window SET n = n + 1 WHERE id BETWEEN {lo} AND {hi}",
        )

    res = read_chunk(url, c, server_id=6449002, after_select=writes)
    assert res.low < res.high and res.backfilled > 0
    final = table_state(url, "snap_window")
    expected = {k: v for k, v in final.items() if lo <= k[0] < hi}
    assert res.rows == expected
    assert (lo + 1,) in res.rows and (lo + 7,) in res.rows and (lo + 6,) not in res.rows


def test_truncate_inside_the_window_empties_the_chunk(mariadb: Any, url: str) -> None:
    _fresh_int_table(mariadb, "snap_trunc", 200)
    plan = plan_snapshot(url, f"{DB}.snap_trunc", chunks=2)
    c = plan[0]
    res = read_chunk(url, c, server_id=6449003, after_select=lambda: mariadb.sql(
        "TRUNCATE TABLE snap_trunc", "INSERT INTO snap_trunc VALUES (0, 'a', 1), (300, 'b', 2)"))
    assert list(res.rows) == [(0,)]


def test_ddl_inside_the_window_stops_the_chunk(mariadb: Any, url: str) -> None:
    _fresh_int_table(mariadb, "snap_ddl", 100)
    plan = plan_snapshot(url, f"{DB}.snap_ddl", chunks=2)
    with pytest.raises(SnapshotError, match="DDL"):
        read_chunk(url, plan[0], server_id=6449004, after_select=lambda: mariadb.sql(
            "ALTER TABLE snap_ddl ADD COLUMN extra INT DEFAULT 5"))
    with pytest.raises(SnapshotError, match="columns changed"):  # and a DDL before LOW
        read_chunk(url, plan[1], server_id=6449004)
    plan = plan_snapshot(url, f"{DB}.snap_ddl", chunks=2)
    mariadb.sql("ALTER TABLE snap_ddl MODIFY v VARCHAR(40) CHARACTER SET latin1")  # same names
    with pytest.raises(SnapshotError, match="columns changed"):
        read_chunk(url, plan[0], server_id=6449004)


def test_snapshot_images_equal_binlog_images(mariadb: Any, url: str) -> None:
    """Every type the snapshot reads is written as the binlog path writes it, byte for byte."""
    mariadb.sql(
        "DROP TABLE IF EXISTS snap_types",
        "CREATE TABLE snap_types (id INT PRIMARY KEY, ti TINYINT, ui BIGINT UNSIGNED, f FLOAT, "
        "d DOUBLE, dc DECIMAL(30,4), b BIT(5), y YEAR, bn BINARY(4), vb VARBINARY(10), bl BLOB, "
        "e ENUM('a','b'), st SET('x','y','z'), ts TIMESTAMP(3) NULL, dt DATETIME(2), t TIME(1), "
        "j JSON, g GEOMETRY, dz DATE, c CHAR(5), v VARCHAR(20), tx TEXT, "
        "gv INT AS (id * 2) VIRTUAL, gs INT AS (id + 1) STORED, inv INT INVISIBLE DEFAULT 7)")
    start = mariadb.binlog_end()
    mariadb.sql(
        "SET SESSION sql_mode = ''",
        "INSERT INTO snap_types (id, ti, ui, f, d, dc, b, y, bn, vb, bl, e, st, ts, dt, t, j, g, "
        "dz, c, v, tx) VALUES "
        "(1, -5, 18446744073709551615, 3.40282e38, 0.1e0 + 0.2e0, '-12.5000', b'101', 0, 'ab', "
        "x'00ff', x'010203', 'b', 'x,z', '2024-01-02 03:04:05.123', '0000-00-00 00:00:00', "
        "'-838:59:59.9', '{\"a\": 1,  \"b\": [1.50, 2]}', ST_GeomFromText('POINT(1 2)', 4326), "
        "'2024-02-00', 'ab ', 'tab\\t\"q\" é', 'long ✓'), "
        "(2, 127, 0, 16777217, 1e0 / 3e0, 0, b'0', 2155, 'ab\\0\\0', '', '', '', '', NULL, "
        "'9999-12-31 23:59:59.99', '12:00:00', '[]', NULL, '0000-00-00', '', '', NULL), "
        "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        "'1970-01-01 00:00:01', '1000-01-01 00:00:00', '00:00:00', '\"s\"', "
        "ST_GeomFromText('LINESTRING(0 0,1 1)'), '1000-01-01', NULL, NULL, '')")
    (chunk,) = plan_snapshot(url, f"{DB}.snap_types")
    res = read_chunk(url, chunk, server_id=6449005)
    stream = BinlogStream(ServerURL.parse(url), StreamOptions(
        start=Position(*start), until_end=True, server_id=6449006,
        tables=lambda s, t: t == "snap_types", table_resolver=ShapeGuard(chunk.table)))
    binlog = {json.loads(r["after"])["id"]: r["after"]
              for b in iter_cdc_batches(stream.changes()) for r in b.to_pylist()}
    assert {k[0]: v for k, v in res.rows.items()} == binlog


def test_backfill_resolver_checks_a_repeated_table_map_once(mariadb: Any, url: str) -> None:
    """A chunk's catch-up reads its table's TABLE_MAP in every transaction: the guard checks
    the first one and hands the repeats on sharing its columns and compiled decoders (a
    JSON column makes it copy the map), with a bounded memory of what it saw."""
    mariadb.sql("DROP TABLE IF EXISTS snap_rep",
                "CREATE TABLE snap_rep (id INT PRIMARY KEY, j JSON, v INT)")
    (chunk,) = plan_snapshot(url, f"{DB}.snap_rep")
    start = mariadb.binlog_end()
    mariadb.sql(*(f"INSERT INTO snap_rep VALUES ({i}, '{{\"n\": {i}}}', {i})" for i in range(30)))
    guard = ShapeGuard(chunk.table)
    stream = BinlogStream(ServerURL.parse(url), StreamOptions(
        start=Position(*start), until_end=True, server_id=6449010,
        tables=lambda s, t: t == "snap_rep", table_resolver=guard))
    try:
        recs = list(stream.changes())
    finally:
        stream.close()
    assert [(r.after["id"], r.after["j"], r.after["v"]) for r in recs] == [
        (i, f'{{"n": {i}}}', i) for i in range(30)]
    maps = {id(r.table_map): r.table_map for r in recs}
    assert len(maps) == 30  # a map of its own per transaction (its place)
    assert len({id(m.row_decoders) for m in maps.values()}) == 1
    assert all(m.columns[1].is_json for m in maps.values())
    assert len(guard._seen) == 1


def test_unique_not_null_key_option(mariadb: Any, url: str) -> None:
    mariadb.sql("DROP TABLE IF EXISTS snap_uk",
                "CREATE TABLE snap_uk (id INT PRIMARY KEY, code VARCHAR(12) NOT NULL, "
                "alt INT NULL, v INT, UNIQUE KEY (code), UNIQUE KEY (alt))",
                "INSERT INTO snap_uk SELECT seq, CONCAT('c', LPAD(seq, 5, '0')), seq, seq "
                "FROM seq_1_to_400")
    plan = plan_snapshot(url, f"{DB}.snap_uk", chunks=3, keys={f"{DB}.snap_uk": ["code"]})
    assert len(plan) == 3 and plan[0].table.key == ("code",) and not plan[0].table.ordered
    out: dict[tuple[Any, ...], str] = {}
    for c in plan:
        res = read_chunk(url, c, server_id=6449007, after_select=lambda: mariadb.sql(
            "UPDATE snap_uk SET v = v + 1 WHERE id % 50 = 0"))
        out.update(res.rows)
    # A text key has no Python order: rows changed in a window are kept by that chunk even
    # outside its range (their state at its HIGH, still exact); the last chunk saw the last.
    assert out == table_state(url, "snap_uk", ("code",))
    with pytest.raises(SnapshotError, match="allow NULL"):
        plan_snapshot(url, f"{DB}.snap_uk", keys={f"{DB}.snap_uk": ["alt"]})
    with pytest.raises(SnapshotError, match="UNIQUE"):
        plan_snapshot(url, f"{DB}.snap_uk", keys={f"{DB}.snap_uk": ["v"]})


def test_no_key_policy_error_and_small_tables(mariadb: Any, url: str) -> None:
    mariadb.sql("DROP TABLE IF EXISTS snap_small, snap_nk",
                "CREATE TABLE snap_small (id BIGINT UNSIGNED PRIMARY KEY)",
                "INSERT INTO snap_small VALUES (1), (18446744073709551615), (9007199254740993), "
                "(9007199254740992)",
                "CREATE TABLE snap_nk (a INT)")
    with pytest.raises(SnapshotError, match="no primary key"):
        plan_snapshot(url, f"{DB}.snap_nk", no_key="error")
    assert len(plan_snapshot(url, f"{DB}.snap_small", chunks=10)) == 4
    assert len(plan_snapshot(url, f"{DB}.snap_small", chunk_size=3)) == 2
    plan = plan_snapshot(url, f"{DB}.snap_small", chunks=4)
    # bounds are exact integers: compared as doubles, 2**53 and 2**53 + 1 would be one value
    assert [c.hi for c in plan] == [(2**53,), (2**53 + 1,), (2**64 - 1,), None]
    rows = [list(read_chunk(url, c, server_id=6449008).rows) for c in plan]
    assert rows == [[(1,)], [(2**53,)], [(2**53 + 1,)], [(2**64 - 1,)]]


def test_apply_step_merges_snapshot_and_stream(spark: Any, concurrent: dict[str, Any],
                                               mariadb: Any, tmp_path: Any) -> None:
    """apply.py with the stream applied *before* the snapshot (the harder order: the seq guard
    and tombstones must keep newer stream changes over older snapshot rows)."""
    from pyspark.sql import functions as F

    from binlake.spark.apply import ApplyConfig, apply_batch, table_path
    from binlake.schema.spec import read_table_spec

    wm: SnapshotWatermarks = concurrent["wm"]
    stream = BinlogStream(ServerURL.parse(concurrent["url"]), StreamOptions(
        start=wm.stream_start, until_end=True, server_id=6449009,
        tables=lambda s, t: (s, t) == (DB, "snap_int")))
    changes = spark.createDataFrame(
        __import__("pyarrow").Table.from_batches(list(iter_cdc_batches(stream.changes()))))
    snap = spark.createDataFrame(concurrent["rows"], schema=changes.schema).where(
        F.col("table") == "snap_int")
    with mariadb.connect() as conn:
        spec = read_table_spec(conn, DB, "snap_int")
        with conn.cursor() as cur:
            cur.execute("SELECT id, a, b, c, d FROM snap_int")
            expected = sorted(tuple(r) for r in cur.fetchall())
    config = ApplyConfig(str(tmp_path / "lake"), app_id="snapshot-test", parallelism=1)
    specs = {(DB, "snap_int"): spec}
    apply_batch(spark, changes, 0, config, specs)
    apply_batch(spark, snap, 1, config, specs)
    got = spark.read.format("delta").load(table_path(config.target, DB, "snap_int"))
    assert sorted(tuple(r) for r in got.select("id", "a", "b", "c", "d").collect()) == expected


def test_high_right_after_a_binlog_rotation(mariadb: Any, url: str) -> None:
    """The binlog end just after a rotation is behind the new file's header events; the
    backfill's stream reaches it there (its boundary moves over header events)."""
    _fresh_int_table(mariadb, "snap_rotate", 100)
    (c,) = plan_snapshot(url, f"{DB}.snap_rotate", chunks=1)
    res = read_chunk(url, c, server_id=6449010, after_select=lambda: mariadb.sql(
        "UPDATE snap_rotate SET n = -1 WHERE id = 4", "FLUSH BINARY LOGS"))
    assert res.high == mariadb.binlog_end() and res.high[1] > 4 and res.low[0] != res.high[0]
    assert json.loads(res.rows[(4,)])["n"] == -1 and res.backfilled == 1


def test_snapshot_of_an_idle_server_just_rotated(mariadb: Any, url: str) -> None:
    """LOW and HIGH both behind a fresh file's header events (the first sync after a
    restart or FLUSH BINARY LOGS): the chunk is read, nothing to backfill."""
    _fresh_int_table(mariadb, "snap_rotated_idle", 50)
    mariadb.sql("FLUSH BINARY LOGS")
    # MariaDB writes the new file's own Binlog_checkpoint once the previous file's
    # transactions are durable, which may be after FLUSH returns: wait for it, or it may
    # land between the chunk's HIGH and the `binlog_end` below (CI saw 344 against 389)
    newest, deadline = mariadb.binlog_end()[0], time.time() + 30
    while not any(r[2] == "Binlog_checkpoint" and str(r[5]) == newest for r in
                  mariadb.sql(f"SHOW BINLOG EVENTS IN '{newest}'", database=None)):
        assert time.time() < deadline, f"no Binlog_checkpoint for {newest}"
        time.sleep(0.05)
    (c,) = plan_snapshot(url, f"{DB}.snap_rotated_idle", chunks=1)
    res = read_chunk(url, c, server_id=6449011)
    end = mariadb.binlog_end()
    assert res.high == end and res.low[0] == end[0] and 4 < res.low[1] <= end[1]
    assert len(res.rows) == 50 and res.backfilled == 0
