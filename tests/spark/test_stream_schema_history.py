"""The Spark stream with a schema history: right names, types and keys for every row of a
primary that logs binlog_row_metadata=MINIMAL, across DDL the stream reads late.

A private MariaDB with MINIMAL row metadata: its TABLE_MAPs carry no column names and no
signedness, so every name in these rows and every unsigned value above 2^31 comes from the
schema history, at the row's position.
"""
from __future__ import annotations

import json
import random
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from binlake.errors import ConfigError
from binlake.cdc.arrow import file_index
from binlake.spark.stream_source import (
    BinlogStreamReader, OffsetUnavailable, load_schema_history,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "binlake_test"


# -- fixtures and helpers --------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(mariadb_factory: Callable[..., Any]) -> Any:
    srv = mariadb_factory(binlog_row_metadata="MINIMAL")
    assert srv.sql("SELECT @@global.binlog_row_metadata", database=None)[0][0] == "MINIMAL"
    return srv



def key(file: str, pos: int) -> tuple[int, int]:
    return (file_index(file), pos)


def offsets(ckpt: Path) -> dict[int, dict[str, Any]]:
    """batch id -> end offset, from Spark's offset log."""
    d = ckpt / "offsets"
    return {int(f.name): json.loads(f.read_text().splitlines()[-1])
            for f in d.iterdir() if f.name.isdigit()}


class Collector:
    """foreachBatch sink, idempotent by batch id; may fail its first batch once."""

    def __init__(self, fail_first: bool = False) -> None:
        self.batches: dict[int, list[dict[str, Any]]] = {}
        self.partitions: dict[int, int] = {}
        self.fail_first = fail_first
        self.failed: tuple[int, list[dict[str, Any]]] | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        self.partitions[batch_id] = df.rdd.getNumPartitions()
        rows = df.toArrow().to_pylist()
        if self.fail_first and self.failed is None and rows:
            self.failed = (batch_id, rows)
            raise RuntimeError(f"sink failure in batch {batch_id} (injected)")
        self.batches[batch_id] = rows

    def rows(self) -> list[dict[str, Any]]:
        return [r for b in sorted(self.batches) for r in self.batches[b]]


def run(spark: Any, server: Any, table: str, ckpt: Path, sink: Collector, history: Path,
        **options: Any) -> None:
    reader = (spark.readStream.format("binlake").option("url", server.url)
              .option("tables", f"{DB}.{table}").option("schemaHistory", str(history)))
    for k, v in options.items():
        reader = reader.option(k, str(v))
    q = (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    assert q.awaitTermination(120), "availableNow query did not finish"
    if q.exception() is not None:
        raise q.exception()


def change(row: dict[str, Any]) -> tuple[Any, ...]:
    """A CDC row as (op, before, after) or ('ddl', statement, new column names)."""
    if row["op"] == "ddl":
        d = json.loads(row["ddl"])
        return ("ddl", row["query"], [c["name"] for c in d["tables"][0]["columns"]])
    load = lambda s: None if s is None else json.loads(s)  # noqa: E731
    return (row["op"], load(row["before"]), load(row["after"]))


def read_all(r: BinlogStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[dict]:
    return [x for p in r.partitions(start, end) for b in r.read(p) for x in b.to_pylist()]


# Unsigned values above 2^31-1 read back negative without the history's signedness, and every
# name would be @1, @2, ... (MINIMAL metadata).
BIG = 4_000_000_000

WORKLOAD = [
    f"INSERT INTO {{t}} VALUES (1, 'one', {BIG}), (2, 'two', 2)",
    "UPDATE {t} SET a = 'uno' WHERE id = 1",
    "ALTER TABLE {t} ADD COLUMN c DECIMAL(6,2) AFTER a",
    "INSERT INTO {t} VALUES (3, 'three', 3.5, 3)",
    "UPDATE {t} SET c = 1.25 WHERE id = 1",
    "ALTER TABLE {t} DROP COLUMN a",
    "INSERT INTO {t} VALUES (4, 4.5, 4)",
    "DELETE FROM {t} WHERE id = 2",
    "ALTER TABLE {t} RENAME COLUMN b TO bee",
    f"INSERT INTO {{t}} VALUES (5, 5.5, {BIG + 5})",
    "UPDATE {t} SET bee = bee + 1 WHERE id = 5",
]


def expected(t: str) -> list[tuple[Any, ...]]:
    one = {"id": 1, "a": "one", "b": BIG}
    return [
        ("insert", None, one),
        ("insert", None, {"id": 2, "a": "two", "b": 2}),
        ("update", one, {**one, "a": "uno"}),
        ("ddl", WORKLOAD[2].format(t=t), ["id", "a", "c", "b"]),
        ("insert", None, {"id": 3, "a": "three", "c": "3.50", "b": 3}),
        ("update", {"id": 1, "a": "uno", "c": None, "b": BIG},
         {"id": 1, "a": "uno", "c": "1.25", "b": BIG}),
        ("ddl", WORKLOAD[5].format(t=t), ["id", "c", "b"]),
        ("insert", None, {"id": 4, "c": "4.50", "b": 4}),
        ("delete", {"id": 2, "c": None, "b": 2}, None),
        ("ddl", WORKLOAD[8].format(t=t), ["id", "c", "bee"]),
        ("insert", None, {"id": 5, "c": "5.50", "bee": BIG + 5}),
        ("update", {"id": 5, "c": "5.50", "bee": BIG + 5}, {"id": 5, "c": "5.50", "bee": BIG + 6}),
    ]


def create(server: Any, t: str) -> None:
    server.sql(f"DROP TABLE IF EXISTS {t}",
               f"CREATE TABLE {t} (id INT PRIMARY KEY, a VARCHAR(20), b INT UNSIGNED)")


def write(server: Any, t: str, statements: list[str]) -> None:
    server.sql(*(s.format(t=t) for s in statements))


# -- through Spark -----------------------------------------------------------------------------

def test_lagging_alters_with_several_partitions(sspark: Any, server: Any, tmp_path: Path) -> None:
    """The query starts (history bootstrapped at 'latest'), then rows, ADD/DROP/RENAME COLUMN
    and more rows are written before it reads them: one backlog batch in 4 partitions, DDL
    inside them, every row under the names of its own position, and a ddl record per ALTER."""
    create(server, "h1")
    ckpt, hist, sink = tmp_path / "ckpt", tmp_path / "h1.json", Collector()
    run(sspark, server, "h1", ckpt, sink, hist)  # nothing yet: starts at the primary's end
    assert sink.rows() == [] and hist.exists()
    write(server, "h1", WORKLOAD)
    end = server.binlog_end()
    opts = {"partitionBytes": 300, "maxPartitions": 4, "serverIdBase": 7100000}
    run(sspark, server, "h1", ckpt, sink, hist, **opts)
    got = [change(r) for r in sink.rows()]
    assert got == expected("h1")
    assert list(sink.partitions.values())[-1] == 4
    ids = sorted(offsets(ckpt))
    assert len(ids) >= 2
    first, last = offsets(ckpt)[ids[-2]], offsets(ckpt)[ids[-1]]  # the backlog batch
    assert key(last["file"], last["pos"]) == key(*end)
    # The DDL is inside the multi-partition batch, not only at its edges: the ranges the
    # driver cut (same walk, same options) put ALTERs in more than one partition.
    r = BinlogStreamReader({"url": server.url, "tables": f"{DB}.h1",
                            "schemaHistory": str(hist), **{k: str(v) for k, v in opts.items()}})
    parts = r.partitions(first, last)
    assert len(parts) == 4
    ddl_at = [key(x["file"], x["pos"]) for x in sink.rows() if x["op"] == "ddl"]
    holding = {i for i, p in enumerate(parts) for k in ddl_at
               if key(p.start_file, p.start_pos) < k < key(p.end_file, p.end_pos)}
    assert len(holding) >= 2, (parts, ddl_at)
    assert all(p.history is not None for p in parts)
    # The file: versions by position, walked up to the batch end.
    h, covered, tables = load_schema_history(hist)
    assert tables == f"{DB}.h1"
    assert covered is not None and key(covered.file, covered.pos) == key(*end)
    names = [[c.name for c in v.table.columns] for v in h.versions[(DB, "h1")]]
    assert names == [["id", "a", "b"], ["id", "a", "c", "b"], ["id", "c", "b"], ["id", "c", "bee"]]


def test_restart_replays_a_batch_across_ddl(sspark: Any, server: Any, tmp_path: Path) -> None:
    """A sink failure in a batch that holds an ALTER; the query is started again from its
    checkpoint (a new driver-side reader: the history comes from its file), more DDL in
    between; the replayed batch is read exactly again and every row keeps its names."""
    create(server, "h2")
    ckpt, hist = tmp_path / "ckpt", tmp_path / "h2.json"
    sink = Collector()
    run(sspark, server, "h2", ckpt, sink, hist)
    write(server, "h2", WORKLOAD[:6])
    failing = Collector(fail_first=True)
    with pytest.raises(Exception, match="injected"):
        run(sspark, server, "h2", ckpt, failing, hist, maxRowsPerTrigger=4)
    assert failing.failed is not None
    replay_id, replay_rows = failing.failed
    assert any(r["op"] == "ddl" for r in replay_rows)  # the failed batch holds the ADD COLUMN
    write(server, "h2", WORKLOAD[6:])
    run(sspark, server, "h2", ckpt, sink, hist, maxRowsPerTrigger=4)
    assert sink.batches[replay_id] == replay_rows  # the same range, the same names
    assert [change(r) for r in sink.rows()] == expected("h2")
    assert len(sink.batches) >= 3
    # Spark committed the earlier batches (commit(end)): the history forgot the versions
    # superseded before one of those ends, and kept the later ones.
    h, _, _ = load_schema_history(hist)
    ends = {key(o["file"], o["pos"]) for o in offsets(ckpt).values()}
    assert key(h.start.file, h.start.pos) in ends
    assert len(h.versions[(DB, "h2")]) < 4 and len(h.log) < 3
    assert [c.name for c in h.versions[(DB, "h2")][-1].table.columns] == ["id", "c", "bee"]


# -- the reader on the driver and the executors, without Spark ---------------------------------

def test_history_ahead_of_the_offsets_and_compaction(server: Any, tmp_path: Path) -> None:
    """The history file was saved by a walk that went further than the offsets Spark kept (a
    driver crash after latestOffset): a new reader reads the earlier ranges by position with
    the right names; commit(end) forgets only what lies before `end`."""
    create(server, "h3")
    hist = tmp_path / "h3.json"
    opts = {"url": server.url, "tables": f"{DB}.h3", "schemaHistory": str(hist)}
    a = BinlogStreamReader(opts)
    s0 = a.initialOffset()
    write(server, "h3", WORKLOAD)
    e = a.latestOffset(s0, ReadAllAvailable())  # saves every DDL up to e
    assert key(e["file"], e["pos"]) == key(*server.binlog_end())
    saved = hist.read_text()
    b = BinlogStreamReader(opts)  # "after the crash": Spark only kept s0
    cur, batches = s0, []
    while (nxt := b.latestOffset(cur, ReadMaxRows(1))) != cur:
        batches.append((nxt, read_all(b, cur, nxt)))
        cur = nxt
    assert cur == e and len(batches) >= 10
    got = [r for _, rows in batches for r in rows]
    assert [change(r) for r in got] == expected("h3")
    assert json.loads(hist.read_text())["log"] == json.loads(saved)["log"]  # nothing re-applied
    # commit: versions superseded before the cut are forgotten, later ones stay.
    after_drop = next(end for end, rows in batches
                      if any(r["op"] == "ddl" and "DROP" in r["query"] for r in rows))
    b.commit(after_drop)
    h, _, _ = load_schema_history(hist)
    assert key(h.start.file, h.start.pos) == key(after_drop["file"], after_drop["pos"])
    assert [[c.name for c in v.table.columns] for v in h.versions[(DB, "h3")]] == \
        [["id", "c", "b"], ["id", "c", "bee"]]
    assert [r.statement for r in h.log] == [WORKLOAD[8].format(t="h3")]
    # Reading from the cut on still works (a fresh reader, from the compacted file) ...
    c = BinlogStreamReader(opts)
    rest = read_all(c, after_drop, e)
    assert [change(r) for r in rest] == expected("h3")[7:]
    # ... but not from before it: the history cannot name those columns any more.
    with pytest.raises(OffsetUnavailable, match="schema history .* starts at"):
        c.partitions(s0, e)


def test_starts_without_a_history(server: Any, mariadb: Any, tmp_path: Path) -> None:
    """No history file and a start in the past: bootstrapped there when no DDL on the tracked
    tables was logged since; otherwise refused with the way out (MINIMAL), or the TABLE_MAP
    names used (FULL)."""
    create(server, "h4")
    past = server.binlog_end()
    server.sql(f"INSERT INTO h4 VALUES (1, 'x', {BIG})")
    server.sql("CREATE TABLE IF NOT EXISTS other_h4 (k INT PRIMARY KEY)",
               "ALTER TABLE other_h4 ADD COLUMN z INT")  # DDL, but not on a tracked table
    opts = {"url": server.url, "tables": f"{DB}.h4", "schemaHistory": str(tmp_path / "a.json"),
            "startingPosition": f"{past[0]}:{past[1]}"}
    r = BinlogStreamReader(opts)
    s0 = r.initialOffset()
    h, covered, _ = load_schema_history(tmp_path / "a.json")
    assert key(h.start.file, h.start.pos) == key(*past) == key(covered.file, covered.pos)
    e = r.latestOffset(s0, ReadAllAvailable())
    assert [change(x) for x in read_all(r, s0, e)] == [("insert", None, {"id": 1, "a": "x", "b": BIG})]
    # DDL on the table since the start: information_schema is not its shape there.
    server.sql("ALTER TABLE h4 ADD COLUMN c INT")
    bad = BinlogStreamReader({**opts, "schemaHistory": str(tmp_path / "b.json")})
    with pytest.raises(ConfigError, match="binlog_row_metadata is MINIMAL") as info:
        bad.initialOffset()
    assert "startingPosition 'latest'" in str(info.value.hint)
    assert not (tmp_path / "b.json").exists()
    # The same on a FULL-metadata primary: names from the TABLE_MAPs, no history, no ddl rows.
    mariadb.sql("DROP TABLE IF EXISTS h4_full",
                "CREATE TABLE h4_full (id INT PRIMARY KEY, b INT UNSIGNED)")
    fpast = mariadb.binlog_end()
    mariadb.sql(f"INSERT INTO h4_full VALUES (1, {BIG})", "ALTER TABLE h4_full ADD COLUMN c INT",
                "INSERT INTO h4_full VALUES (2, 2, 3)")
    full = BinlogStreamReader({"url": mariadb.url, "tables": f"{DB}.h4_full",
                               "schemaHistory": str(tmp_path / "c.json"),
                               "startingPosition": f"{fpast[0]}:{fpast[1]}"})
    f0 = full.initialOffset()
    fe = full.latestOffset(f0, ReadAllAvailable())
    assert [change(x) for x in read_all(full, f0, fe)] == [
        ("insert", None, {"id": 1, "b": BIG}), ("insert", None, {"id": 2, "b": 2, "c": 3})]
    assert not (tmp_path / "c.json").exists()
    # A history kept for other tables is refused, not silently used.
    with pytest.raises(ConfigError, match="tracks the tables"):
        BinlogStreamReader({**opts, "tables": f"{DB}.other_h4"}).initialOffset()


# -- binlake sync --------------------------------------------------------------------------------

def test_snapshot_backfill_on_minimal_metadata(server: Any) -> None:
    """The snapshot's backfill names MINIMAL TABLE_MAPs from the planned model (and checks
    their column types against it): writes inside a chunk's window land with the right names
    and signedness, the same rows the table has at HIGH."""
    from binlake.snapshot.chunks import read_chunk
    from binlake.snapshot.plan import plan_snapshot
    from binlake.snapshot.server import SnapshotError

    server.sql("DROP TABLE IF EXISTS h5",
               "CREATE TABLE h5 (id INT PRIMARY KEY, name VARCHAR(20), qty INT UNSIGNED)",
               "INSERT INTO h5 VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
    (chunk,) = plan_snapshot(server.url, f"{DB}.h5")

    def writes() -> None:
        server.sql(f"INSERT INTO h5 VALUES (4, 'd', {BIG})", "UPDATE h5 SET name = 'bb' WHERE id = 2",
                   "DELETE FROM h5 WHERE id = 3")

    res = read_chunk(server.url, chunk, server_id=6449901, after_select=writes)
    assert res.backfilled == 3
    assert {k: json.loads(v) for k, v in res.rows.items()} == {
        (1,): {"id": 1, "name": "a", "qty": 1}, (2,): {"id": 2, "name": "bb", "qty": 2},
        (4,): {"id": 4, "name": "d", "qty": BIG}}
    # A TABLE_MAP whose types are not the planned ones stops the chunk (no names to check).
    (chunk,) = plan_snapshot(server.url, f"{DB}.h5")
    with pytest.raises(SnapshotError, match="not the planned ones"):
        read_chunk(server.url, chunk, server_id=6449901, after_select=lambda: server.sql(
            "SET SESSION sql_log_bin = 0", "ALTER TABLE h5 MODIFY qty BIGINT UNSIGNED",
            "SET SESSION sql_log_bin = 1", f"INSERT INTO h5 VALUES (5, 'e', {BIG})"))


def test_sync_on_minimal_metadata_across_add_column(spark: Any, mariadb_factory: Any,
                                                    tmp_path: Path) -> None:
    """`binlake sync` on a MINIMAL-metadata primary: snapshot, then an ALTER ADD COLUMN while
    the stream runs; the Delta table ends equal to the MariaDB table, new column included,
    and the change log holds the ddl record."""
    from binlake.spark.compare import comparable
    from binlake.spark.sync import SyncOptions, run_sync, schema_history_path

    srv = mariadb_factory(binlog_row_metadata="MINIMAL")
    srv.sql("CREATE DATABASE shop", database=None)
    srv.sql("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), qty INT UNSIGNED, "
            "price DECIMAL(8,2))",
            "INSERT INTO items VALUES " + ",".join(f"({i}, 'i{i}', {i}, {i}.25)" for i in range(1, 41)),
            database="shop")
    warehouse = tmp_path / "wh"
    opts = SyncOptions(url=srv.url, tables="shop.*", warehouse=warehouse, once=True,
                       change_log=True)
    first = run_sync(opts, spark=spark)
    assert first.snapshot_rows == 40
    assert schema_history_path(warehouse).exists()

    rng = random.Random(5)

    def workload() -> None:
        conn = srv.connect(database="shop")
        try:
            with conn.cursor() as cur:
                for n in range(40):
                    if n == 20:
                        cur.execute("ALTER TABLE items ADD COLUMN note VARCHAR(16) NULL")
                    i = rng.randint(1, 60)
                    if n % 3 == 0:
                        cur.execute("INSERT INTO items (id, name, qty, price) VALUES "
                                    "(%s, %s, %s, %s)", (100 + n, f"n{n}", BIG + n, Decimal(n) / 4))
                    elif n % 3 == 1:
                        note = ", note = 'x%d'" % n if n > 20 else ""
                        cur.execute(f"UPDATE items SET qty = qty + 1{note} WHERE id = %s", (i,))
                    else:
                        cur.execute("DELETE FROM items WHERE id = %s", (i,))
                    started.set()
                    time.sleep(0.05)
        finally:
            conn.close()

    # A --once run whose binlog has not moved ends at once (nothing to catch up): start it
    # after the workload's first change, so it streams while the rest (and ALTER) runs.
    started = threading.Event()
    t = threading.Thread(target=workload)
    t.start()
    try:
        assert started.wait(60)
        during = run_sync(opts, spark=spark)  # streams while the workload (and ALTER) runs
    finally:
        t.join()
    after = run_sync(opts, spark=spark)  # the rest
    assert during.rows > 0 and during.rows + after.rows >= 20

    conn = srv.connect(database="shop")
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM items")
        names = [d[0] for d in cur.description]
        want = sorted((tuple(comparable(v) for v in r) for r in cur.fetchall()), key=repr)
    conn.close()
    assert names == ["id", "name", "qty", "price", "note"]
    assert any(r[2][1] > 2**31 for r in want)  # unsigned values MINIMAL metadata would sign
    df = spark.read.format("delta").load(str(warehouse / "shop" / "items"))
    assert sorted(c for c in df.columns if not c.startswith("_binlake_")) == sorted(names)
    got = sorted((tuple(comparable(r[n]) for n in names) for r in df.select(*names).collect()),
                 key=repr)
    assert got == want
    assert any(r[4] is not None for r in got)  # the new column carries values
    log = spark.read.format("delta").load(str(warehouse / "_binlake" / "changes"))
    ddl = [r["query"] for r in log.where("op = 'ddl'").collect()]
    assert ddl == ["ALTER TABLE items ADD COLUMN note VARCHAR(16) NULL"]
