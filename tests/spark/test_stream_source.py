"""spark.readStream.format("binlake"): every change of a live MariaDB exactly once, in order.

A private MariaDB (its binlog is ours alone: rotations and purges touch no other test) and the
session's SparkSession. Expected rows always come from `binlake decode` over the server's
binlog files for the same range, so the stream is checked against the file decoder.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("pyspark")

from click.testing import CliRunner
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from binlake.cli.program import main as cli
from binlake.errors import ConfigError
from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.replica.position import TransactionBoundaries
from binlake.cdc.arrow import file_index
from binlake.spark.stream_source import (
    BinlogRange, BinlogStreamReader, OffsetUnavailable, RangeIncomplete,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DB = "binlake_test"
Key = tuple[int, int]


# -- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(mariadb_factory: Callable[..., Any]) -> Any:
    return mariadb_factory()



def key(file: str, pos: int) -> Key:
    return (file_index(file), pos)


def binlog_files(server: Any) -> list[Path]:
    return sorted((p for p in Path(server.binlog_dir).iterdir() if p.suffix[1:].isdigit()),
                  key=lambda p: file_index(p.name))


def decoded(server: Any, table: str, start: tuple[str, int], end: tuple[str, int]) -> list[dict[str, Any]]:
    """`binlake decode` of the server's binlog files: the table's records in [start, end)."""
    files = [str(f) for f in binlog_files(server) if key(f.name, 4) >= key(start[0], 4)]
    res = CliRunner().invoke(cli, ["decode", "--tables", f"{DB}.{table}", *files])
    assert res.exit_code == 0, res.output
    out = []
    for line in res.output.splitlines():
        d = json.loads(line)
        d.pop("primary_key", None)
        if key(start[0], start[1]) <= key(d["position"]["file"], d["position"]["pos"]) < key(*end):
            out.append(d)
    return out


def as_decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A CDC row in `binlake decode`'s JSON shape (no JSON columns in these workloads)."""
    d: dict[str, Any] = {"op": row["op"], "schema": row["schema"], "table": row["table"]}
    if row["query"] is not None:
        d["statement"] = row["query"]
    for which in ("before", "after"):
        if row[which] is not None:
            d[which] = json.loads(row[which])
    d["position"] = {"file": row["file"], "pos": row["pos"], "end_pos": row["end_pos"],
                     "row": row["row"]}
    if row["inner"] is not None:
        d["position"]["inner"] = row["inner"]
    d["gtid"] = row["gtid"]
    d["ts"] = int(row["ts"].timestamp())
    return d


def transaction_ends(server: Any) -> set[Key]:
    """Every transaction boundary in the server's binlog files (file decoder's view)."""
    ends = set()
    for f in binlog_files(server):
        tx = TransactionBoundaries()
        for ev in read_events(f):
            if tx.observe(ev):
                ends.add(key(f.name, ev.end))
    return ends


def checkpoint_offsets(ckpt: Path) -> dict[int, dict[str, Any]]:
    """batch id -> this source's end offset, from Spark's offset log."""
    out = {}
    d = ckpt / "offsets"
    for f in d.iterdir() if d.exists() else ():
        if f.name.isdigit():
            lines = f.read_text().splitlines()
            out[int(f.name)] = json.loads(lines[-1])
    return out


class Collector:
    """A foreachBatch sink that is idempotent by batch id (a replayed batch replaces itself)."""

    def __init__(self, fail_first: bool = False, partitions: bool = False) -> None:
        self.batches: dict[int, list[dict[str, Any]]] = {}
        self.num_partitions: dict[int, int] = {}
        self.fail_first = fail_first
        self.failed: tuple[int, list[dict[str, Any]]] | None = None
        self.partitions = partitions

    def __call__(self, df: Any, batch_id: int) -> None:
        if self.partitions:
            self.num_partitions[batch_id] = df.rdd.getNumPartitions()
        rows = df.toArrow().to_pylist()  # one action: each action re-reads the source
        if self.fail_first and self.failed is None:
            self.failed = (batch_id, rows)
            raise RuntimeError(f"sink failure in batch {batch_id} (injected)")
        self.batches[batch_id] = rows

    def rows(self) -> list[dict[str, Any]]:
        return [r for b in sorted(self.batches) for r in self.batches[b]]


def stream(spark: Any, server: Any, table: str, ckpt: Path, sink: Collector, *,
           start: tuple[str, int] | None = None, trigger: dict[str, Any] | None = None,
           **options: Any) -> Any:
    reader = (spark.readStream.format("binlake").option("url", server.url)
              .option("tables", f"{DB}.{table}"))
    if start is not None:
        reader = reader.option("startingPosition", f"{start[0]}:{start[1]}")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return (reader.load().writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(ckpt))
            .trigger(**(trigger or {"availableNow": True})).start())


def run_available_now(*args: Any, **kw: Any) -> None:
    q = stream(*args, **kw)
    assert q.awaitTermination(120), "availableNow query did not finish"
    if q.exception() is not None:
        raise q.exception()


def writer(server: Any, table: str, ids: range, *, pause: float = 0.0,
           flush_at: int | None = None) -> None:
    """A workload on `table`: inserts (some multi-row), updates, deletes, a TRUNCATE."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            for i in ids:
                if flush_at is not None and i == flush_at:
                    cur.execute("FLUSH BINARY LOGS")
                if i % 10 == 3:  # a multi-statement transaction
                    cur.execute("BEGIN")
                    cur.execute(f"INSERT INTO {table} VALUES ({i}, 'm{i}', {i}.5), ({i + 10000}, 'n', NULL)")
                    cur.execute(f"UPDATE {table} SET v = CONCAT(v, '+') WHERE id < {i} AND id % 3 = 0")
                    cur.execute("COMMIT")
                elif i % 10 == 7:
                    cur.execute(f"DELETE FROM {table} WHERE id = {i - 1}")
                elif i % 25 == 24:
                    cur.execute(f"TRUNCATE TABLE {table}")
                else:
                    cur.execute(f"INSERT INTO {table} VALUES ({i}, 'v{i}', {i})")
                if pause:
                    time.sleep(pause)
    finally:
        conn.close()


def create(server: Any, table: str) -> None:
    server.sql(f"DROP TABLE IF EXISTS {table}",
               f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(64), n DECIMAL(8,2))")


# -- the reader without Spark (driver and executor sides called directly) ---------------------

def test_offsets_limits_and_ranges(server: Any) -> None:
    create(server, "s0")
    start = server.binlog_end()
    writer(server, "s0", range(1, 31))
    end = server.binlog_end()
    opts = {"url": server.url, "tables": f"{DB}.s0", "startingPosition": f"{start[0]}:{start[1]}"}
    r = BinlogStreamReader(opts)
    s0 = r.initialOffset()
    assert (s0["file"], s0["pos"]) == start and s0["gtid_state"]
    assert r.initialOffset() is s0  # resolved once per run
    last = r.latestOffset(s0, ReadAllAvailable())
    assert (last["file"], last["pos"]) == end
    ends = transaction_ends(server)
    # Admission control: 4 records per batch, cut at transaction boundaries.
    cur, got = s0, []
    while (nxt := r.latestOffset(cur, ReadMaxRows(4))) != cur:
        assert key(nxt["file"], nxt["pos"]) in ends
        parts = r.partitions(cur, nxt)
        assert len(parts) == 1
        rows = [x for p in parts for b in r.read(p) for x in b.to_pylist()]
        assert 0 < len(rows) <= 4 or len({x["gtid"] for x in rows}) == 1
        got += rows
        cur = nxt
    assert cur == last
    expected = decoded(server, "s0", start, end)
    assert [as_decoded(x) for x in got] == expected
    # Parallel ranges: split at boundaries, distinct server ids, same rows.
    split = BinlogStreamReader({**opts, "partitionBytes": "800", "maxPartitions": "4"})
    parts = split.partitions(s0, last)
    assert len(parts) == 4
    assert len({p.server_id for p in parts}) == 4
    assert all(key(p.end_file, p.end_pos) in ends for p in parts)
    assert [(p.end_file, p.end_pos) for p in parts[:-1]] == [(p.start_file, p.start_pos) for p in parts[1:]]
    rows = [x for p in parts for b in split.read(p) for x in b.to_pylist()]
    assert [as_decoded(x) for x in rows] == expected
    assert r.partitions(last, last) == []


def test_xa_rows_go_out_in_the_batch_of_their_commit(server: Any) -> None:
    """XA PREPARE in one micro-batch, XA COMMIT in the next: the offset between them carries the
    pending PREPAREs, and the task reading the COMMIT re-reads its PREPARE's range (also when
    a split puts the COMMIT in a later partition). XA ROLLBACK leaves nothing."""
    create(server, "sx")
    start = server.binlog_end()
    a, c = server.connect(), server.connect()
    try:
        a.cursor().execute("XA START 'sx-a'")
        a.cursor().execute("INSERT INTO sx VALUES (1, 'xa', 1), (2, 'xa', 2)")
        a.cursor().execute("XA END 'sx-a'")
        a.cursor().execute("XA PREPARE 'sx-a'")
        c.cursor().execute("XA START 'sx-b'")
        c.cursor().execute("INSERT INTO sx VALUES (3, 'rolled back', 3)")
        c.cursor().execute("XA END 'sx-b'")
        c.cursor().execute("XA PREPARE 'sx-b'")
        # (plain inserts: the prepared transactions hold their row locks until decided)
        server.sql(*(f"INSERT INTO sx VALUES ({i}, 'v', {i})" for i in range(10, 16)))
        opts = {"url": server.url, "tables": f"{DB}.sx", "startingPosition": f"{start[0]}:{start[1]}"}
        r = BinlogStreamReader(opts)
        s0 = r.initialOffset()
        o1 = r.latestOffset(s0, ReadAllAvailable())
        assert sorted(x[0] for x in o1["xa_prepared"]) == ["X'73782d61',X'',1", "X'73782d62',X'',1"]
        batch1 = [x for p in r.partitions(s0, o1) for b in r.read(p) for x in b.to_pylist()]
        assert {x["id"] for x in map(json.loads, (y["after"] or y["before"] for y in batch1
                                                  if y["op"] != "truncate"))}.isdisjoint({1, 2, 3})
        a.cursor().execute("XA COMMIT 'sx-a'")
        c.cursor().execute("XA ROLLBACK 'sx-b'")
        writer(server, "sx", range(20, 26))
    finally:
        a.close()
        c.close()
    end = server.binlog_end()
    o2 = r.latestOffset(o1, ReadAllAvailable())
    assert (o2["file"], o2["pos"]) == end and "xa_prepared" not in o2
    batch2 = [x for p in r.partitions(o1, o2) for b in r.read(p) for x in b.to_pylist()]
    expected = decoded(server, "sx", start, end)
    assert [as_decoded(x) for x in batch1 + batch2] == expected
    committed = [x for x in expected if x.get("after") and x["after"]["id"] in (1, 2)]
    assert len(committed) == 2 and key(committed[0]["position"]["file"],
                                       committed[0]["position"]["pos"]) >= key(o1["file"], o1["pos"])
    assert not [x for x in expected if x.get("after") and x["after"]["id"] == 3]
    # Split into ranges: each task starts with what is pending at its start.
    split = BinlogStreamReader({**opts, "partitionBytes": "300", "maxPartitions": "8"})
    parts = split.partitions(s0, o2)
    assert len(parts) > 2 and any(p.xa_prepared for p in parts[1:])
    rows = [x for p in parts for b in split.read(p) for x in b.to_pylist()]
    assert [as_decoded(x) for x in rows] == expected


def test_a_query_started_while_an_xa_is_prepared_gets_its_rows(server: Any, tmp_path: Path) -> None:
    """startingPosition 'latest' (a sync's snapshot point) after an XA PREPARE: the initial
    offset carries it, so its COMMIT brings the rows the snapshot could not see. The schema
    history starts after the PREPARE: its rows take the table's shape at the COMMIT."""
    create(server, "sy")
    conn = server.connect()
    try:
        conn.cursor().execute("XA START 'sy-1'")
        conn.cursor().execute("INSERT INTO sy VALUES (1, 'xa', 1)")
        conn.cursor().execute("XA END 'sy-1'")
        conn.cursor().execute("XA PREPARE 'sy-1'")
        r = BinlogStreamReader({"url": server.url, "tables": f"{DB}.sy",
                                "schemaHistory": str(tmp_path / "history.json")})
        s0 = r.initialOffset()
        assert [x[0] for x in s0["xa_prepared"]] == ["X'73792d31',X'',1"]
        conn.cursor().execute("XA COMMIT 'sy-1'")
    finally:
        conn.close()
    o1 = r.latestOffset(s0, ReadAllAvailable())
    rows = [x for p in r.partitions(s0, o1) for b in r.read(p) for x in b.to_pylist()]
    assert [(x["op"], json.loads(x["after"])["id"]) for x in rows] == [("insert", 1)]


def test_read_fails_loudly_past_the_primarys_end(server: Any) -> None:
    """A range ending beyond what the server has (failover to a server with less binlog)."""
    f, p = server.binlog_end()
    r = BinlogStreamReader({"url": server.url})
    bad = BinlogRange(0, f, p, f, p + 1000, 6450001)
    with pytest.raises(RangeIncomplete, match=f"{f}:{p}"):
        list(r.read(bad))
    with pytest.raises(OffsetUnavailable, match="has only"):
        r.latestOffset({"file": f, "pos": p + 1000}, ReadAllAvailable())


def test_starting_positions(server: Any) -> None:
    create(server, "s5")
    first = server.sql("SHOW BINARY LOGS", database=None)[0][0]
    gtid_before = server.sql("SELECT @@gtid_binlog_pos", database=None)[0][0]
    at = server.binlog_end()
    server.sql("INSERT INTO s5 VALUES (1, 'a', 1)")

    def initial(text: str) -> dict[str, Any]:
        return BinlogStreamReader({"url": server.url, "startingPosition": text}).initialOffset()

    assert (initial("earliest")["file"], initial("earliest")["pos"]) == (first, 4)
    latest = initial("latest")
    assert (latest["file"], latest["pos"]) == server.binlog_end()
    by_gtid = initial(gtid_before)  # the first transaction after it starts where the end was
    assert (by_gtid["file"], by_gtid["pos"], by_gtid["gtid_state"]) == (*at, gtid_before)
    assert initial(json.dumps(by_gtid)) == by_gtid
    assert initial(server.sql("SELECT @@gtid_binlog_pos", database=None)[0][0])["pos"] == latest["pos"]
    # Two GTID domains interleaved: 1-1-1, 0-1-k, 1-1-2.
    def in_domain(domain: int, v: int) -> None:
        server.sql(f"SET SESSION gtid_domain_id = {domain}", f"INSERT INTO s5 VALUES ({v}, 'd', 1)")

    in_domain(1, 10)
    at0 = server.binlog_end()
    in_domain(0, 11)
    at1 = server.binlog_end()
    in_domain(1, 12)
    pos = server.sql("SELECT @@gtid_binlog_pos", database=None)[0][0]  # '0-1-k,1-1-2'
    d0, d1 = sorted(pos.split(","))
    k = int(d0.rsplit("-", 1)[1])
    assert (initial(f"{d0},1-1-1")["file"], initial(f"{d0},1-1-1")["pos"]) == at1
    with pytest.raises(ConfigError, match="1-1-2 .* holds it"):
        initial(f"0-1-{k - 1},{d1}")  # lacks 0-1-k (at0), yet holds 1-1-2 after it
    assert initial(f"0-1-{k - 1},1-1-1")["pos"] == at0[1]
    with pytest.raises(OffsetUnavailable, match="no GTIDs of domain 7"):
        initial("7-1-1")
    with pytest.raises(OffsetUnavailable, match="has no binlog"):
        initial("mariadb-bin.999999:4")
    with pytest.raises(ConfigError, match="maxRowsPerTrigger"):
        BinlogStreamReader({"url": server.url, "maxRowsPerTrigger": "many"})


def test_mysql_binlogs_through_binlake_serve(corpus_dir: Path, tmp_path: Path,
                                             cdc_row_check: Any) -> None:
    """MySQL 8.0 binlogs (a GTID chain across a rotation; zstd TRANSACTION_PAYLOADs) served by
    `binlake serve` as a MySQL primary: boundaries, cuts and ranges as on MariaDB."""
    from binlake.protocol.auth import CACHING_SHA2_PASSWORD, Account
    from binlake.serve.primary import Primary, ServeConfig
    from binlake.serve.server import PrimaryServer
    from binlake.serve.store import BinlogStore

    sets = {"chain": [("binlog.000001", "percona-binlog-server/data_80045_gtid_binlog.000001"),
                      ("binlog.000002", "percona-binlog-server/data_80045_gtid_binlog.000002")],
            "payloads": [("mysql-bin.000057", "mysql-binlog-connector-rust/mysql-bin.000057")]}
    for name, files in sets.items():
        paths = []
        for served, rel in files:
            (tmp_path / name).mkdir(exist_ok=True)
            link = tmp_path / name / served
            link.symlink_to(corpus_dir / rel)
            paths.append(link)
        srv = PrimaryServer(Primary(BinlogStore(paths), ServeConfig(flavor="mysql")),
                            {"repl": Account("pw", CACHING_SHA2_PASSWORD)})
        srv.start()
        try:
            url = srv.url("repl", "pw", ssl_mode="DISABLED", allow_public_key_retrieval="true")
            r = BinlogStreamReader({"url": url, "startingPosition": "earliest"})
            s0 = r.initialOffset()
            ends = set()
            for f in paths:
                tx = TransactionBoundaries()
                ends |= {key(f.name, ev.end) for ev in read_events(f) if tx.observe(ev)}
            last = r.latestOffset(s0, ReadAllAvailable())
            assert key(last["file"], last["pos"]) == max(ends)  # the last commit, not a STOP after it
            expected = [rec for f in paths for rec in iter_changes(read_events(f))]
            cur, got, cuts = s0, [], 0
            while (nxt := r.latestOffset(cur, ReadMaxRows(2))) != cur:
                assert key(nxt["file"], nxt["pos"]) in ends
                got += [x for p in r.partitions(cur, nxt) for b in r.read(p) for x in b.to_pylist()]
                cur, cuts = nxt, cuts + 1
            assert cur == last and cuts > 1
            assert len(got) == len(expected) > 0
            for row, rec in zip(got, expected):
                cdc_row_check(row, rec)  # JSON columns are text here: the shared check knows
            if name == "payloads":  # a MySQL GTID set: the next transaction's GTID event
                uuid = "76f3e7be-6720-11ed-9cad-0242ac110002"
                g = BinlogStreamReader({"url": url, "startingPosition": f"{uuid}:1-12"}).initialOffset()
                assert (g["file"], g["pos"], g["gtid_set"]) == ("mysql-bin.000057", 651, f"{uuid}:1-12")
            split = BinlogStreamReader({"url": url, "partitionBytes": "600", "maxPartitions": "3"})
            parts = split.partitions(s0, last)
            assert len(parts) > 1
            rows = [x for p in parts for b in split.read(p) for x in b.to_pylist()]
            assert rows == [x for p in r.partitions(s0, last) for b in r.read(p) for x in b.to_pylist()]
        finally:
            srv.stop()


# -- through Spark -------------------------------------------------------------------------------

def test_exactly_once_in_order_while_writing(sspark: Any, server: Any, tmp_path: Path) -> None:
    create(server, "s1")
    start = server.binlog_end()
    ckpt, sink = tmp_path / "ckpt", Collector()
    t = threading.Thread(target=writer, args=(server, "s1", range(1, 41)),
                         kwargs={"pause": 0.1, "flush_at": 20})
    t.start()
    try:
        run_available_now(sspark, server, "s1", ckpt, sink, start=start)
    finally:
        t.join()
    first_run = len(sink.rows())
    writer(server, "s1", range(41, 56))  # more writes, then the same query again
    run_available_now(sspark, server, "s1", ckpt, sink, start=start)
    end = server.binlog_end()
    got = [as_decoded(x) for x in sink.rows()]
    assert got == decoded(server, "s1", start, end)
    assert len(got) > first_run  # the second run found the later writes
    assert {r["op"] for r in got} >= {"insert", "update", "delete", "truncate"}
    last = checkpoint_offsets(ckpt)[max(checkpoint_offsets(ckpt))]
    assert (last["file"], last["pos"]) == end


def test_admission_control_cuts_at_transactions(sspark: Any, server: Any, tmp_path: Path) -> None:
    create(server, "s2")
    start = server.binlog_end()
    writer(server, "s2", range(1, 24))
    server.sql("BEGIN", *(f"INSERT INTO s2 VALUES ({1000 + i}, 'big', 1)" for i in range(6)), "COMMIT")
    writer(server, "s2", range(24, 30))
    end = server.binlog_end()
    ckpt, sink = tmp_path / "ckpt", Collector()
    run_available_now(sspark, server, "s2", ckpt, sink, start=start, maxRowsPerTrigger=4)
    offsets = checkpoint_offsets(ckpt)
    ends = transaction_ends(server)
    assert len(sink.batches) >= 6
    prev = key(*start)
    for b in sorted(sink.batches):
        rows, off = sink.batches[b], offsets[b]
        assert key(off["file"], off["pos"]) in ends
        assert rows and (len(rows) <= 4 or len({r["gtid"] for r in rows}) == 1)
        assert all(prev <= key(r["file"], r["pos"]) < key(off["file"], off["pos"]) for r in rows)
        prev = key(off["file"], off["pos"])
    assert any(len(rows) == 6 for rows in sink.batches.values())  # the big one, alone
    assert [as_decoded(x) for x in sink.rows()] == decoded(server, "s2", start, end)


def test_parallel_ranges_equal_one_range(sspark: Any, server: Any, tmp_path: Path) -> None:
    create(server, "s3")
    start = server.binlog_end()
    writer(server, "s3", range(1, 40))
    end = server.binlog_end()
    one, many = Collector(partitions=True), Collector(partitions=True)
    run_available_now(sspark, server, "s3", tmp_path / "one", one, start=start)
    run_available_now(sspark, server, "s3", tmp_path / "many", many, start=start,
                      partitionBytes=1500, maxPartitions=4, serverIdBase=7000000)
    assert list(one.num_partitions.values()) == [1]
    assert list(many.num_partitions.values()) == [4]
    assert many.rows() == one.rows()
    assert [as_decoded(x) for x in many.rows()] == decoded(server, "s3", start, end)


def test_restart_from_checkpoint(sspark: Any, server: Any, tmp_path: Path) -> None:
    """Stopped mid-stream, restarted; then a sink failure and a replay of that batch."""
    create(server, "s4")
    start = server.binlog_end()
    ckpt, sink = tmp_path / "ckpt", Collector()
    t = threading.Thread(target=writer, args=(server, "s4", range(1, 61)), kwargs={"pause": 0.05})
    t.start()
    try:
        q = stream(sspark, server, "s4", ckpt, sink, start=start,
                   trigger={"processingTime": "200 milliseconds"})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            filled = sum(1 for b in sink.batches.values() if b)
            if filled >= 2 or (filled and not t.is_alive()):
                break
            time.sleep(0.1)
        q.stop()
        assert q.exception() is None
    finally:
        t.join()
    stopped_at = len(sink.rows())
    assert stopped_at > 0
    writer(server, "s4", range(61, 70))
    failing = Collector(fail_first=True)
    failing.batches = sink.batches
    with pytest.raises(Exception, match="injected"):
        run_available_now(sspark, server, "s4", ckpt, failing, start=start)
    assert failing.failed is not None
    replay_id, replay_rows = failing.failed
    run_available_now(sspark, server, "s4", ckpt, sink, start=start)
    assert sink.batches[replay_id] == replay_rows  # the same range, read again
    end = server.binlog_end()
    assert [as_decoded(x) for x in sink.rows()] == decoded(server, "s4", start, end)


def test_purged_checkpoint_fails_with_recovery(sspark: Any, mariadb_factory: Callable[..., Any],
                                               tmp_path: Path) -> None:
    srv = mariadb_factory()
    create(srv, "p")
    writer(srv, "p", range(1, 5))
    ckpt, sink = tmp_path / "ckpt", Collector()
    run_available_now(sspark, srv, "p", ckpt, sink, startingPosition="earliest")
    assert sink.rows()
    last = checkpoint_offsets(ckpt)[max(checkpoint_offsets(ckpt))]
    writer(srv, "p", range(5, 9))
    srv.sql("FLUSH BINARY LOGS", database=None)
    current = srv.binlog_end()[0]
    deadline = time.monotonic() + 20
    while True:  # a file stays until its binlog checkpoint moved on (crash recovery needs it)
        srv.sql(f"PURGE BINARY LOGS TO '{current}'", database=None)
        if srv.sql("SHOW BINARY LOGS", database=None)[0][0] == current:
            break
        assert time.monotonic() < deadline, "MariaDB did not purge the old binlogs"
        time.sleep(0.2)
    with pytest.raises(Exception) as info:
        run_available_now(sspark, srv, "p", ckpt, Collector())
    text = str(info.value)
    assert f"{last['file']}:{last['pos']}" in text
    assert "purged" in text and "re-snapshot" in text
    # A batch replayed from the offset log after the purge fails on the executor the same way.
    r = BinlogStreamReader({"url": srv.url, "tables": f"{DB}.p"})
    with pytest.raises(OffsetUnavailable, match=f"{last['file']}:{last['pos']}.*re-snapshot"):
        list(r.read(BinlogRange(0, last["file"], last["pos"], current, 4, 6450001)))
