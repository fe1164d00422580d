"""`binlake sync` end to end: a real MariaDB, real Spark, Delta tables equal to the source.

Every test has its own server (`mariadb_factory`) and warehouse. Equality is exact: every
Delta table, without binlake's `_binlake_*` columns, holds the same multiset of rows as its
MariaDB table, values compared as Python values (Decimal with its scale, datetimes with their
fractions), not only counts.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.spark.compare import comparable
from binlake.spark.sync import SyncError, SyncOptions, run_sync
from binlake.verify import verify

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "shop"


# -- helpers -----------------------------------------------------------------------------------

def sort_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def source_tables(server: Any) -> list[str]:
    rows = server.sql("SELECT table_name FROM information_schema.tables "
                      f"WHERE table_schema = '{DB}' ORDER BY 1", database=None)
    return [r[0] for r in rows]


def source_rows(server: Any, table: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    conn = server.connect(database=DB)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM `{table}`")
            names = [d[0] for d in cur.description]
            rows = [tuple(comparable(v) for v in r) for r in cur.fetchall()]
    finally:
        conn.close()
    return names, sort_rows(rows)


def lake_rows(spark: Any, warehouse: Path, table: str, names: list[str]) -> list[tuple[Any, ...]]:
    df = spark.read.format("delta").load(str(warehouse / DB / table))
    cols = [c for c in df.columns if not c.startswith("_binlake_")]
    assert sorted(cols) == sorted(names), (table, cols, names)
    return sort_rows([tuple(comparable(r[n]) for n in names) for r in df.select(*names).collect()])


def primary_key(server: Any, table: str) -> list[str]:
    rows = server.sql("SELECT column_name FROM information_schema.key_column_usage "
                      f"WHERE table_schema = '{DB}' AND table_name = '{table}' "
                      "AND constraint_name = 'PRIMARY' ORDER BY ordinal_position", database=None)
    return [r[0] for r in rows]


def assert_lake_equals_source(spark: Any, server: Any, warehouse: Path) -> dict[str, int]:
    counts = {}
    for table in source_tables(server):
        names, want = source_rows(server, table)
        got = lake_rows(spark, warehouse, table, names)
        # primary keys are unique in Delta (no duplicate versions of a row)
        key = primary_key(server, table)
        idx = [names.index(k) for k in key]
        keys = [tuple(r[i] for i in idx) for r in got]
        assert len(keys) == len(set(keys)), f"{table}: duplicate keys in Delta"
        if got != want:
            missing = [r for r in want if r not in set(got)][:5]
            extra = [r for r in got if r not in set(want)][:5]
            raise AssertionError(f"{DB}.{table}: Delta has {len(got)} rows, MariaDB {len(want)}; "
                                 f"missing {missing}, extra {extra}")
        counts[table] = len(want)
    return counts


def create_schema(server: Any, rng: random.Random, items: int = 1500, lines: int = 1200,
                  tmp: int = 200) -> None:
    server.sql(f"CREATE DATABASE IF NOT EXISTS {DB}", database=None)
    conn = server.connect(database=DB)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), "
                    "price DECIMAL(12,2), qty INT NOT NULL, at DATETIME(3))")
        cur.execute("CREATE TABLE order_lines (order_id INT, line_no SMALLINT, sku VARCHAR(20), "
                    "amount DECIMAL(10,3), PRIMARY KEY (order_id, line_no))")
        cur.execute("CREATE TABLE scratch (id BIGINT PRIMARY KEY, v VARCHAR(10))")
        for start in range(1, items + 1, 500):
            vals = ",".join(f"({i}, 'item-{i}', {rng.randint(1, 99999) / 100:.2f}, {i % 17}, "
                            f"'2024-01-02 03:04:{i % 60:02d}.{i % 1000:03d}')"
                            for i in range(start, min(items + 1, start + 500)))
            cur.execute(f"INSERT INTO items VALUES {vals}")
        vals = ",".join(f"({o}, {ln}, 'sku-{o}-{ln}', {rng.randint(0, 10**6) / 1000:.3f})"
                        for o in range(1, lines // 4 + 1) for ln in range(1, 5))
        cur.execute(f"INSERT INTO order_lines VALUES {vals}")
        cur.execute("INSERT INTO scratch VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(1, tmp + 1)))
    conn.close()


class Writer(threading.Thread):
    """A bounded, seeded workload: inserts, updates (key changes too), deletes, multi-table
    transactions, one TRUNCATE, one ADD COLUMN and a new table that matches the pattern."""

    def __init__(self, server: Any, seed: int, ops: int = 300, pause: float = 0.02,
                 ddl: bool = True) -> None:
        super().__init__(daemon=True)
        self.server, self.rng, self.ops, self.pause, self.ddl = server, random.Random(seed), ops, pause, ddl
        self.error: BaseException | None = None
        self.done_ops = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _run(self) -> None:
        rng = self.rng
        conn = self.server.connect(database=DB)
        cur = conn.cursor()
        next_item, next_order, next_scratch, late_id = 100_000, 50_000, 10_000, 0
        altered = late = False
        for n in range(self.ops):
            if self.stop.is_set():
                break
            if self.ddl and n == self.ops // 3:
                cur.execute("TRUNCATE TABLE scratch")
            elif self.ddl and n == self.ops // 2:
                cur.execute("ALTER TABLE items ADD COLUMN note VARCHAR(20) NULL")
                altered = True
            elif self.ddl and n == (2 * self.ops) // 3:
                cur.execute("CREATE TABLE late_table (k INT, s VARCHAR(8), d DECIMAL(6,1), "
                            "PRIMARY KEY (k, s))")
                late = True
            op = rng.random()
            if late and op < 0.1:
                late_id += 1
                cur.execute("INSERT INTO late_table VALUES (%s, %s, %s)",
                            (late_id, f"s{late_id % 3}", Decimal(late_id) / 10))
                if late_id % 4 == 0:
                    cur.execute("UPDATE late_table SET d = d + 1, k = k + 1000 WHERE k = %s",
                                (late_id - 2,))
            elif op < 0.25:
                next_item += 1
                cur.execute("INSERT INTO items (id, name, price, qty, at) VALUES "
                            "(%s, %s, %s, %s, NOW(3))",
                            (next_item, f"new-{next_item}", Decimal(rng.randint(0, 10**6)) / 100, n))
            elif op < 0.45:
                lo = rng.randint(1, next_item)
                note = ", note = 'n%d'" % n if altered and rng.random() < 0.5 else ""
                cur.execute(f"UPDATE items SET price = price + 1.25, qty = qty + 1{note} "
                            "WHERE id BETWEEN %s AND %s", (lo, lo + rng.randint(0, 3)))
            elif op < 0.52:  # primary key change
                old = rng.randint(1, 2000)
                next_item += 1
                cur.execute("UPDATE IGNORE items SET id = %s WHERE id = %s", (next_item, old))
            elif op < 0.60:
                cur.execute("DELETE FROM items WHERE id = %s", (rng.randint(1, next_item),))
            elif op < 0.72:
                next_order += 1
                cur.execute("INSERT INTO order_lines VALUES (%s, 1, 'x', 1.5), (%s, 2, NULL, NULL)",
                            (next_order, next_order))
                o = rng.randint(1, 300)
                cur.execute("UPDATE IGNORE order_lines SET line_no = line_no + 10 "
                            "WHERE order_id = %s AND line_no = 1", (o,))
            elif op < 0.80:
                cur.execute("DELETE FROM order_lines WHERE order_id = %s", (rng.randint(1, 300),))
            elif op < 0.92:  # a multi-table transaction
                cur.execute("BEGIN")
                i = rng.randint(1, next_item)
                cur.execute("UPDATE items SET name = CONCAT('tx-', %s) WHERE id = %s", (n, i))
                next_order += 1
                cur.execute("INSERT INTO order_lines VALUES (%s, 1, %s, 9.999)",
                            (next_order, f"item-{i}"))
                next_scratch += 1
                cur.execute("INSERT INTO scratch VALUES (%s, 'tx')", (next_scratch,))
                cur.execute("DELETE FROM scratch WHERE id = %s", (rng.randint(1, next_scratch),))
                cur.execute("COMMIT")
            else:
                next_scratch += 1
                cur.execute("INSERT INTO scratch VALUES (%s, %s)", (next_scratch, f"w{n}"))
                cur.execute("UPDATE scratch SET v = 'u' WHERE id = %s", (rng.randint(1, next_scratch),))
            self.done_ops = n + 1
            time.sleep(self.pause)
        conn.close()


def options(server: Any, warehouse: Path, **kw: Any) -> SyncOptions:
    return SyncOptions(url=server.url, tables=f"{DB}.*", warehouse=warehouse, once=True, **kw)


# -- 1. equality under a concurrent workload ---------------------------------------------------

def test_sync_equals_source_under_concurrent_writes(spark: Any, mariadb_factory: Any,
                                                    tmp_path: Path) -> None:
    server = mariadb_factory()
    create_schema(server, random.Random(1))
    warehouse = tmp_path / "wh"
    writer = Writer(server, seed=7, ops=300, pause=0.02)
    writer.start()
    try:
        first = run_sync(options(server, warehouse, chunk_size=400), spark=spark)
        assert first.snapshot_rows > 0
    finally:
        writer.join(120)
    assert writer.error is None, writer.error
    assert not writer.is_alive()
    second = run_sync(options(server, warehouse, chunk_size=400), spark=spark)
    counts = assert_lake_equals_source(spark, server, warehouse)
    assert set(counts) == {"items", "order_lines", "scratch", "late_table"}
    assert counts["late_table"] > 0
    # Metrics of the last run: its batches and changes, a lag, the binlog position reached.
    prom = dict(line.split(" ", 1) for line in
                (warehouse / "_binlake" / "metrics.prom").read_text().splitlines()
                if not line.startswith("#"))
    assert int(prom["binlake_sync_batches_total"]) == second.batches
    assert int(prom["binlake_sync_changes_total"]) == second.rows
    if second.batches:
        assert float(prom["binlake_sync_lag_seconds"]) >= 0
        assert int(prom["binlake_sync_binlog_position"]) > 4


def _xa(conn: Any, xid: str, *statements: str, decide: str | None = None) -> None:
    """XA START .. statements .. XA END, XA PREPARE, then `decide` ('COMMIT'/'ROLLBACK')."""
    with conn.cursor() as cur:
        cur.execute(f"XA START '{xid}'")
        for stmt in statements:
            cur.execute(stmt)
        cur.execute(f"XA END '{xid}'")
        cur.execute(f"XA PREPARE '{xid}'")
        if decide:
            cur.execute(f"XA {decide} '{xid}'")


def test_sync_with_xa_transactions(spark: Any, mariadb_factory: Any, tmp_path: Path) -> None:
    """An XA transaction prepared before the snapshot and committed after it (the snapshot
    cannot see its rows; its COMMIT must bring them), one rolled back (its rows never reach
    Delta), one prepared and committed between syncs around an ordinary transaction."""
    server = mariadb_factory()
    server.sql(f"CREATE DATABASE {DB}", database=None)
    server.sql("CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL)",
               "INSERT INTO acct VALUES " + ",".join(f"({i}, {i * 10})" for i in range(1, 21)),
               database=DB)
    warehouse = tmp_path / "wh"
    pre, other = server.connect(database=DB), server.connect(database=DB)
    try:
        _xa(pre, "pre", "UPDATE acct SET bal = bal + 1 WHERE id = 1", "INSERT INTO acct VALUES (50, 5)",
            "DELETE FROM acct WHERE id = 20")
        first = run_sync(options(server, warehouse, chunk_size=7), spark=spark)
        assert first.snapshot_rows == 20
        # prepared, not committed: invisible to the snapshot
        assert server.sql("SELECT COUNT(*) FROM acct WHERE id = 50", database=DB) == [(0,)]
        pre.cursor().execute("XA COMMIT 'pre'")
        _xa(other, "rb", "INSERT INTO acct VALUES (60, 6)", "DELETE FROM acct WHERE id = 2",
            decide="ROLLBACK")
        _xa(other, "ok", "UPDATE acct SET bal = 0 WHERE id = 3", "INSERT INTO acct VALUES (70, 7)")
        pre.cursor().execute("UPDATE acct SET bal = -4 WHERE id = 4")
        other.cursor().execute("XA COMMIT 'ok'")
    finally:
        pre.close()
        other.close()
    run_sync(options(server, warehouse, chunk_size=7), spark=spark)
    counts = assert_lake_equals_source(spark, server, warehouse)
    assert counts == {"acct": 21}
    ids = {r[0] for r in server.sql("SELECT id FROM acct", database=DB)}
    assert {50, 70} <= ids and 60 not in ids and {2, 20} & ids == {2}


# -- 2. SCD type 2 ------------------------------------------------------------------------------

def test_scd2_history_follows_the_changes(spark: Any, mariadb_factory: Any, tmp_path: Path) -> None:
    server = mariadb_factory()
    server.sql(f"CREATE DATABASE {DB}", database=None)
    server.sql("CREATE TABLE h (id INT PRIMARY KEY, v VARCHAR(10), n INT)",
               "INSERT INTO h VALUES (1, 'a', 1), (2, 'x', 1), (3, 'keep', 1)", database=DB)
    warehouse = tmp_path / "wh"
    opts = SyncOptions(url=server.url, tables=f"{DB}.h", warehouse=warehouse, once=True,
                       scd_type=2)
    run_sync(opts, spark=spark)
    server.sql("UPDATE h SET v = 'b' WHERE id = 1", database=DB)
    server.sql("UPDATE h SET v = 'c', n = 2 WHERE id = 1", database=DB)
    run_sync(opts, spark=spark)  # history across batches ...
    server.sql("DELETE FROM h WHERE id = 1", database=DB)
    server.sql("INSERT INTO h VALUES (1, 'd', 3)", database=DB)
    server.sql("UPDATE h SET id = 20 WHERE id = 2", database=DB)
    server.sql("UPDATE h SET v = 'e' WHERE id = 1", database=DB)
    run_sync(opts, spark=spark)  # ... and inside one batch

    df = spark.read.format("delta").load(str(warehouse / DB / "h"))
    rows = [r.asDict(recursive=True) for r in df.collect()]

    def seq(s: Any) -> tuple[int, ...] | None:
        return None if s is None else (s["file_index"], s["pos"], s["inner"], s["row"])

    hist: dict[int, list[tuple[Any, ...]]] = {}
    for r in rows:
        hist.setdefault(r["id"], []).append((seq(r["__START_AT"]), seq(r["__END_AT"]), r["v"], r["n"]))
    for k in hist:
        hist[k].sort()
    versions = {k: [(v, n) for _, _, v, n in h] for k, h in hist.items()}
    assert versions == {1: [("a", 1), ("b", 1), ("c", 2), ("d", 3), ("e", 3)],
                        2: [("x", 1)], 20: [("x", 1)], 3: [("keep", 1)]}
    one = hist[1]
    # each version ends where the next begins, except across the delete (a gap)
    assert one[0][1] == one[1][0] and one[1][1] == one[2][0] and one[3][1] == one[4][0]
    assert one[2][1] is not None and one[2][1] < one[3][0]
    assert one[4][1] is None                   # current
    assert hist[2][0][1] is not None           # key moved away: closed
    assert hist[20][0][1] is None and hist[3][0][1] is None
    assert all(start < end for start, end, *_ in one[:4])
    # the open versions are the source table
    current = sorted((r["id"], r["v"], r["n"]) for r in rows if r["__END_AT"] is None)
    assert current == sorted(tuple(r) for r in server.sql("SELECT id, v, n FROM h", database=DB))


# -- 3. crash safety ------------------------------------------------------------------------------

def _sync_cmd(server: Any, warehouse: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "binlake.cli", "sync", server.url, "--tables", f"{DB}.*",
            "--warehouse", str(warehouse), "--once", "--master", "local[2]", *extra]


def _start(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    out = open(log, "ab")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **(env or {})})


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the job and its Spark JVM (its own process group, started above)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def _wait_for(cond: Any, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


# Four `binlake sync` runs, each starting a Spark JVM, plus the batches between the kills: on
# a slow 2-core machine that took 6.7 minutes (session 26), past the suite's 300 s per test,
# though every step passed. The waits inside keep their own limits.
@pytest.mark.timeout(900)
def test_sync_survives_sigkill(spark: Any, mariadb_factory: Any, tmp_path: Path) -> None:
    server = mariadb_factory()
    rng = random.Random(int(os.environ.get("BINLAKE_CRASH_SEED", "0")) or None)
    create_schema(server, random.Random(3), items=3000, lines=2000, tmp=500)
    warehouse = tmp_path / "wh"
    log = tmp_path / "sync.log"
    state = warehouse / "_binlake" / "sync.json"
    # writes all the time the job is killed and restarted (bounded), so the stream has work
    writer = Writer(server, seed=11, ops=3000, pause=0.03, ddl=False)
    writer.start()
    extra = ("--chunk-size", "500", "--max-rows-per-trigger", "400")
    killed = []
    try:
        # 1. inside the snapshot: the driver has handed some chunks' rows to delta-rs, and
        # their table is not committed (other tables may be)
        proc = _start(_sync_cmd(server, warehouse, *extra), log,
                      env={"BINLAKE_FAULT_KILL_IN_SNAPSHOT": str(rng.randint(1, 10))})
        assert proc.wait(300) == -signal.SIGKILL, log.read_text()[-3000:]
        _kill(proc)  # its Spark JVM too
        assert b"fault injection: SIGKILL in the snapshot" in log.read_bytes()
        phase = json.loads(state.read_text())
        killed.append(("snapshot", phase.get("pending"), phase.get("snapshot_done")))
        # 2. during streaming, inside a batch: between a table's tombstones and its MERGE
        # in the driver (delta-rs), other tables of the batch committed or not
        seen = log.stat().st_size
        proc = _start(_sync_cmd(server, warehouse, *extra), log,
                      env={"BINLAKE_FAULT_KILL_IN_DRIVER_MERGE": str(rng.randint(1, 3))})
        assert proc.wait(300) == -signal.SIGKILL, log.read_text()[-3000:]
        _kill(proc)  # its Spark JVM too
        assert b"fault injection: SIGKILL in a driver MERGE" in log.read_bytes()[seen:]
        killed.append(("stream",))
        # 3. between the Delta commits of a batch and Spark's record of it (offset commit)
        seen = log.stat().st_size
        proc = _start(_sync_cmd(server, warehouse, *extra), log,
                      env={"BINLAKE_FAULT_KILL_AFTER_APPLY": "1"})
        assert proc.wait(300) == -signal.SIGKILL, log.read_text()[-3000:]
        _kill(proc)  # its Spark JVM too
        assert b"fault injection: SIGKILL after applying batch" in log.read_bytes()[seen:]
        killed.append(("after-apply",))
    finally:
        writer.stop.set()
        writer.join(120)
    assert writer.error is None, writer.error
    # 3. to completion
    proc = _start(_sync_cmd(server, warehouse, *extra), log)
    assert proc.wait(300) == 0, log.read_text()[-4000:]
    assert len(killed) == 3 and not killed[0][2], killed
    # the proof: `binlake verify` (chunked checksums on both sides, rows by key and value)
    report = verify(server.url, f"{DB}.*", warehouse, chunk_size=1000, spark=spark, wait=0)
    assert report.equal, report.to_json()
    rows = {t.table: (t.rows, t.lake_rows) for t in report.tables}
    assert set(rows) == {f"{DB}.{t}" for t in source_tables(server)}
    assert all(n == m > 0 for n, m in rows.values()), rows


def purge_all_but_newest(server: Any) -> str:
    """FLUSH + PURGE until only the newest binlog is left (MariaDB keeps a file while its
    binlog checkpoint, i.e. InnoDB crash recovery, still needs it: retry a little)."""
    server.sql("FLUSH BINARY LOGS", database=None)
    newest = server.sql("SHOW MASTER STATUS", database=None)[0][0]
    deadline = time.time() + 30
    while True:
        server.sql(f"PURGE BINARY LOGS TO '{newest}'", database=None)
        logs = [r[0] for r in server.sql("SHOW BINARY LOGS", database=None)]
        if logs == [newest]:
            return newest
        assert time.time() < deadline, f"could not purge: {logs}"
        time.sleep(0.2)


# -- 4. purged binlog ---------------------------------------------------------------------------

def test_purged_binlog_fails_clearly(spark: Any, mariadb_factory: Any, tmp_path: Path) -> None:
    server = mariadb_factory()
    server.sql(f"CREATE DATABASE {DB}", database=None)
    server.sql("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(10))",
               "INSERT INTO p VALUES (1, 'a'), (2, 'b')", database=DB)
    warehouse = tmp_path / "wh"
    opts = options(server, warehouse)
    run_sync(opts, spark=spark)
    server.sql("UPDATE p SET v = 'c' WHERE id = 1", database=DB)
    run_sync(opts, spark=spark)
    before = lake_rows(spark, warehouse, "p", ["id", "v"])
    version = spark.sql(f"DESCRIBE HISTORY delta.`{warehouse / DB / 'p'}`").count()
    server.sql("INSERT INTO p VALUES (3, 'lost')", "DELETE FROM p WHERE id = 2", database=DB)
    purge_all_but_newest(server)
    with pytest.raises(SyncError) as info:
        run_sync(opts, spark=spark)
    text = str(info.value)
    offset = json.loads((warehouse / "_binlake" / "sync.json").read_text())
    # names the checkpointed position (file:offset), says it was purged and to re-snapshot
    assert re.search(r"mariadb-bin\.000001:\d+: mariadb-bin\.000001 was purged", text), text
    assert "re-snapshot" in text, text
    assert "\n" not in text and len(text) < 800, text
    assert lake_rows(spark, warehouse, "p", ["id", "v"]) == before
    assert spark.sql(f"DESCRIBE HISTORY delta.`{warehouse / DB / 'p'}`").count() == version
    assert offset["snapshot_done"]


# -- 5. the demo --------------------------------------------------------------------------------

@pytest.mark.slow
def test_demo(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "binlake.cli", "sync", "--warehouse",
                           str(tmp_path / "demo"), "--master", "local[2]"],
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "DIFFERENT" not in proc.stdout, proc.stdout
    assert proc.stdout.count(" ok") >= 4, proc.stdout


def test_once_with_nothing_new_starts_no_query(spark: Any, mariadb_factory: Any,
                                               tmp_path: Path) -> None:
    """`--once` on a binlog that ends where the stream would resume runs no streaming
    query; a change since, or a batch planned but not committed, does."""
    from binlake.spark.sync import caught_up

    server = mariadb_factory()
    server.sql(f"CREATE DATABASE IF NOT EXISTS {DB}",
               f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(10))",
               f"INSERT INTO {DB}.t VALUES (1, 'a'), (2, 'b')")
    wh = tmp_path / "wh"
    ckpt = wh / "_binlake" / "checkpoint"
    first = run_sync(options(server, wh), spark)
    assert (first.snapshot_rows, first.batches) == (2, 0)
    assert not (ckpt / "offsets").exists()  # no query ran

    server.sql(f"UPDATE {DB}.t SET v = 'c' WHERE id = 2")
    second = run_sync(options(server, wh), spark)
    assert second.batches >= 1 and second.rows == 1
    got = spark.read.format("delta").load(str(wh / DB / "t")).where("id = 2").first()
    assert got["v"] == "c"
    last = max(int(p.name) for p in (ckpt / "offsets").iterdir() if p.name.isdigit())

    third = run_sync(options(server, wh), spark)
    assert third.batches == 0
    assert caught_up(server.url, ckpt, None)
    (ckpt / "commits" / str(last)).rename(tmp_path / "commit")  # planned, not committed
    assert not caught_up(server.url, ckpt, None)
    (tmp_path / "commit").rename(ckpt / "commits" / str(last))
    server.sql(f"INSERT INTO {DB}.t VALUES (3, 'd')")
    assert not caught_up(server.url, ckpt, None)
    assert not caught_up(server.url, tmp_path / "none", "latest")
