"""XA transactions on a live MariaDB: rows go out at XA COMMIT, never at XA PREPARE or after
XA ROLLBACK, whether the stream saw the PREPARE, resumed after it from a checkpoint, started
by GTIDs after it, or lost its link inside it. The reference is `binlake decode` of the
server's own binlog files."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from binlake.cli.program import main
from binlake.replica.checkpoint import CheckpointStore
from binlake.replica.position import Position
from binlake.replica.connection import MySQLConnection
from binlake.replica.stream import BinlogStream, StreamOptions, find_prepares, prepared_xids
from binlake.replica.url import ServerURL

from tcpproxy import TcpProxy  # tests/integration is on sys.path

SCHEMA = "binlake_test"


def decoded(server, table: str, start: tuple[str, int]) -> list[dict]:
    files = sorted(str(p) for p in Path(server.binlog_dir).glob("mariadb-bin.[0-9]*"))
    res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.{table}", *files],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = [json.loads(line) for line in res.output.splitlines()]
    return [d for d in out if (d["position"]["file"], d["position"]["pos"]) >= start]


def as_json(rec) -> dict:
    return json.loads(json.dumps(rec.to_json_dict(), ensure_ascii=False))


def ids(recs: list[dict]) -> list[tuple[str, int]]:
    return [(r["op"], (r.get("after") or r.get("before"))["id"]) for r in recs]


def prepare(conn, xid: str, *statements: str, rows: list | None = None, table: str = "") -> None:
    """XA START, the statements (and `rows` inserted into `table`), XA END, XA PREPARE."""
    with conn.cursor() as cur:
        cur.execute(f"XA START '{xid}'")
        for stmt in statements:
            cur.execute(stmt)
        if rows:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", rows)
        cur.execute(f"XA END '{xid}'")
        cur.execute(f"XA PREPARE '{xid}'")


def xa_workload(server, table: str, big: int = 0) -> dict:
    """XA 'a' prepared, an ordinary commit, XA 'b' prepared | mid | XA COMMIT 'a',
    XA ROLLBACK 'b', an ordinary commit, a one-phase XA."""
    server.sql(f"DROP TABLE IF EXISTS {table}",
               f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(200))")
    a, b, c = server.connect(), server.connect(), server.connect()
    try:
        start = server.binlog_end()
        prepare(a, f"{table}-a", f"INSERT INTO {table} VALUES (1, 'a1'), (2, 'a2')",
                f"UPDATE {table} SET v = 'a1+' WHERE id = 1", table=table,
                rows=[(1000 + i, "x" * 150) for i in range(big)])
        b.cursor().execute(f"INSERT INTO {table} VALUES (100, 'plain')")
        prepare(c, f"{table}-b", f"INSERT INTO {table} VALUES (3, 'rolled back')")
        mid = server.binlog_end_gtid()
        a.cursor().execute(f"XA COMMIT '{table}-a'")
        c.cursor().execute(f"XA ROLLBACK '{table}-b'")
        with b.cursor() as cur:
            cur.execute(f"INSERT INTO {table} VALUES (101, 'plain')")
            cur.execute(f"XA START '{table}-c'")
            cur.execute(f"INSERT INTO {table} VALUES (4, 'one phase')")
            cur.execute(f"XA END '{table}-c'")
            cur.execute(f"XA COMMIT '{table}-c' ONE PHASE")
        end = server.binlog_end()
    finally:
        for conn in (a, b, c):
            conn.close()
    return {"start": start, "mid": mid, "end": end}


EXPECTED = [("insert", 100), ("insert", 1), ("insert", 2), ("update", 1), ("insert", 101),
            ("insert", 4)]


def read(url: str, start: Position, table: str, *, limit: int | None = None,
         stop_at: tuple[str, int] | None = None) -> tuple[list[dict], Position]:
    """The table's records from `start` (to `stop_at`, or `limit` of them), and the position."""
    bs = BinlogStream(ServerURL.parse(url), StreamOptions(start=start, until_end=True,
                                                          stop_at=stop_at,
                                                          tables=lambda s, t: t == table))
    got: list[dict] = []
    try:
        for rec in bs.changes():
            got.append(as_json(rec))
            if limit is not None and len(got) == limit:
                break
    finally:
        bs.close()
    return got, bs.position


def test_rows_go_out_at_the_commit_and_never_after_a_rollback(mariadb) -> None:
    w = xa_workload(mariadb, "xa_order")
    ref = decoded(mariadb, "xa_order", w["start"])
    assert ids(ref) == EXPECTED  # the file decoder agrees: 3 was rolled back, 1 and 2 wait
    got, _ = read(mariadb.url, Position(*w["start"]), "xa_order")
    assert got == ref
    commit = [r for r in got if r["after"] and r["after"]["id"] in (1, 2)]
    assert len({(r["position"]["file"], r["position"]["pos"]) for r in commit}) == 1
    assert (commit[0]["position"]["file"], commit[0]["position"]["pos"]) > w["mid"][:2]
    assert [r["position"]["row"] for r in got if r["gtid"] == commit[0]["gtid"]] == [0, 1, 2]


def test_a_checkpoint_between_prepare_and_commit_resumes_exactly(mariadb, tmp_path: Path) -> None:
    w = xa_workload(mariadb, "xa_resume")
    ref = decoded(mariadb, "xa_resume", w["start"])
    first, pos = read(mariadb.url, Position(*w["start"]), "xa_resume", stop_at=w["mid"][:2])
    assert ids(first) == [("insert", 100)]
    assert (pos.file, pos.pos) == w["mid"][:2]
    assert sorted(r.xid for r in pos.xa_prepared) == ["X'78615f726573756d652d61',X'',1",
                                                      "X'78615f726573756d652d62',X'',1"]
    store = CheckpointStore(tmp_path / "ckpt.json")
    store.save(pos)
    loaded, _ = store.load()
    assert loaded == pos
    # A new stream from the checkpoint never saw the PREPARE: it re-reads its range.
    rest, end = read(mariadb.url, loaded, "xa_resume")
    assert first + rest == ref
    assert end.xa_prepared == ()
    # Stopped inside the XA COMMIT's records: the position counts them and keeps the range.
    part, inside = read(mariadb.url, loaded, "xa_resume", limit=2)
    assert ids(part) == [("insert", 1), ("insert", 2)]
    assert inside.rows_done == 2 and len(inside.xa_prepared) == 2
    tail, _ = read(mariadb.url, Position.from_json(json.loads(json.dumps(inside.to_json()))),
                   "xa_resume")
    assert first + part + tail == ref


def test_a_gtid_start_after_the_prepare_finds_it(mariadb) -> None:
    w = xa_workload(mariadb, "xa_gtid")
    ref = decoded(mariadb, "xa_gtid", w["mid"][:2])
    assert ids(ref) == EXPECTED[1:]
    # Only GTIDs: nothing says where 'a' was prepared; the stream walks back for it.
    got, _ = read(mariadb.url, Position(gtid_state=w["mid"][2]), "xa_gtid")
    assert got == ref


def test_link_cut_inside_a_big_prepare(mariadb) -> None:
    w = xa_workload(mariadb, "xa_cut", big=3000)
    ref = decoded(mariadb, "xa_cut", w["start"])
    assert len(ref) == 3000 + len(EXPECTED)
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    proxy.cut_after(3000 + 200_000)  # handshake etc., then well inside the ~500 KB PREPARE
    base = ServerURL.parse(mariadb.url)
    url = ServerURL("127.0.0.1", proxy.port, base.user, base.password, {"ssl_mode": "DISABLED"})
    bs = BinlogStream(url, StreamOptions(start=Position(*w["start"]), until_end=True,
                                         heartbeat=0.5, tables=lambda s, t: t == "xa_cut"))
    try:
        got = [as_json(rec) for rec in bs.changes()]
    finally:
        bs.close()
        proxy.close()
    assert bs.reconnects == 1
    assert got == ref  # the held rows of the cut PREPARE were read again, once


def test_prepared_before_a_fresh_start_is_found(mariadb) -> None:
    """A stream started after the PREPARE with no position saying so (at the primary's end, as
    after a snapshot): XA RECOVER names the transaction, a walk back finds its PREPARE, and
    the commit brings its rows."""
    mariadb.sql("DROP TABLE IF EXISTS xa_fresh", "CREATE TABLE xa_fresh (id INT PRIMARY KEY, v VARCHAR(20))")
    conn = mariadb.connect()
    try:
        prepare(conn, "xa_fresh-1", "INSERT INTO xa_fresh VALUES (7, 'seven')")
        start = mariadb.binlog_end()
        url = ServerURL.parse(mariadb.url)
        with MySQLConnection.connect(url.host, url.port, url.user, url.password) as c:
            pending = prepared_xids(c)
        xid = "X'78615f66726573682d31',X'',1"
        assert xid in pending
        found = find_prepares(url, {xid}, start, server_id=6449999)
        assert found[xid].file == start[0] and found[xid].end <= start[1]
        conn.cursor().execute("XA COMMIT 'xa_fresh-1'")
    finally:
        conn.close()
    got, _ = read(mariadb.url, Position(*start), "xa_fresh")
    assert ids(got) == [("insert", 7)]
    assert got == decoded(mariadb, "xa_fresh", start)


def test_a_checkpoint_inside_a_commit_means_the_same_under_another_table_filter(mariadb) -> None:
    """An XA COMMIT's records are numbered by their place among all the rows of its PREPARE
    (filtered tables' rows included), like any transaction's: a checkpoint taken inside them
    with one filter resumes with another without skipping or repeating a change."""
    mariadb.sql("DROP TABLE IF EXISTS xa_fa", "DROP TABLE IF EXISTS xa_fb",
                "CREATE TABLE xa_fa (id INT PRIMARY KEY, v VARCHAR(20))",
                "CREATE TABLE xa_fb (id INT PRIMARY KEY, v VARCHAR(20))")
    conn = mariadb.connect()
    try:
        start = mariadb.binlog_end()
        prepare(conn, "xa-filters", "INSERT INTO xa_fa VALUES (1, 'a'), (2, 'b')",
                "INSERT INTO xa_fb VALUES (10, 'c')", "UPDATE xa_fa SET v = 'a+' WHERE id = 1",
                "INSERT INTO xa_fb VALUES (11, 'd')")
        conn.cursor().execute("XA COMMIT 'xa-filters'")
    finally:
        conn.close()

    def stream(tables: set[str], at: Position, limit: int | None = None):
        bs = BinlogStream(ServerURL.parse(mariadb.url), StreamOptions(
            start=at, until_end=True, tables=lambda s, t: s == SCHEMA and t in tables))
        got = []
        try:
            for rec in bs.changes():
                got.append((rec.table, rec.op, (rec.after or rec.before)["id"], rec.row))
                if len(got) == limit:
                    break
        finally:
            bs.close()
        return got, bs.position

    both, _ = stream({"xa_fa", "xa_fb"}, Position(*start))
    assert both == [("xa_fa", "insert", 1, 0), ("xa_fa", "insert", 2, 1), ("xa_fb", "insert", 10, 2),
                    ("xa_fa", "update", 1, 3), ("xa_fb", "insert", 11, 4)]
    only_b, _ = stream({"xa_fb"}, Position(*start))
    assert only_b == [both[2], both[4]]  # the same numbers, whatever the filter
    res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.xa_fb", *sorted(
        str(p) for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*"))], catch_exceptions=False)
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [(r["after"]["id"], r["position"]["row"]) for r in rows if r["table"] == "xa_fb"
            and (r["position"]["file"], r["position"]["pos"]) >= start] == [(10, 2), (11, 4)]
    # Two changes handed out with both tables, then resumed with one: nothing lost or repeated.
    part, inside = stream({"xa_fa", "xa_fb"}, Position(*start), limit=2)
    assert part == both[:2] and inside.rows_done == 2
    assert stream({"xa_fb"}, inside)[0] == [both[2], both[4]]
    assert stream({"xa_fa"}, inside)[0] == [both[3]]


def test_a_filtered_decode_numbers_xa_rows_as_an_unfiltered_one(mariadb) -> None:
    """`decode --tables` passes the left-out tables' rows events over, except inside an open
    XA transaction, where their rows still count in the numbering of the kept records."""
    mariadb.sql("DROP TABLE IF EXISTS xa_left", "DROP TABLE IF EXISTS xa_kept",
                "CREATE TABLE xa_left (id INT PRIMARY KEY, v VARCHAR(20))",
                "CREATE TABLE xa_kept (id INT PRIMARY KEY, v VARCHAR(20))")
    conn = mariadb.connect()
    try:
        start = mariadb.binlog_end()
        prepare(conn, "xa-two-tables", "INSERT INTO xa_left VALUES (1, 'l'), (2, 'l'), (3, 'l')",
                "INSERT INTO xa_kept VALUES (1, 'k'), (2, 'k')",
                "INSERT INTO xa_left VALUES (4, 'l')", "INSERT INTO xa_kept VALUES (3, 'k')")
        conn.cursor().execute("XA COMMIT 'xa-two-tables'")
    finally:
        conn.close()
    files = sorted(str(p) for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*"))

    def kept(*extra: str) -> list[dict]:
        res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.xa_kept", *extra, *files],
                                 catch_exceptions=False)
        assert res.exit_code == 0, res.output
        out = [json.loads(line) for line in res.output.splitlines()]
        return [d for d in out if (d["position"]["file"], d["position"]["pos"]) >= start]

    skipped, walked = kept(), kept("--start-position", "4")  # (a position: every event seen)
    assert skipped == walked
    assert [r["after"]["id"] for r in skipped] == [1, 2, 3]
    assert [r["position"]["row"] for r in skipped] == [3, 4, 6]  # after xa_left's 3, then 1
    # the Spark files source's way: its decoder told between events what it may pass over
    from binlake.binlog.decoder import BinlogDecoder
    from binlake.binlog.files import read_events
    from binlake.cdc.arrow import events_to_batches

    last = Path(files[-1])
    assert start[0] == last.name

    def keep(schema: str, table: str) -> bool:
        return (schema, table) == (SCHEMA, "xa_kept")

    dec = BinlogDecoder(file=last.name, json_images=True, table_filter=keep)
    rows = [r for b in events_to_batches(read_events(last, decoder=dec), tables=keep, decoder=dec)
            for r in b.to_pylist() if (r["file"], r["pos"]) >= start]
    assert [(r["op"], r["row"]) for r in rows] == [("insert", 3), ("insert", 4), ("insert", 6)]


def test_decode_jobs_find_a_prepare_in_an_earlier_file(mariadb_factory) -> None:
    """`decode --jobs`: the worker that meets an XA COMMIT finds its PREPARE two files back
    (another worker's file) and re-reads it; the output is an in-order run's, byte for byte.
    A PREPARE before the first file given fails alike in both. (A private server: an XA
    across files would trip other tests' references, which decode the shared server's
    files one by one.)"""
    mariadb = mariadb_factory()
    try:
        _decode_jobs_across_files(mariadb)
    finally:
        mariadb.stop()


def _decode_jobs_across_files(mariadb) -> None:
    mariadb.sql("DROP TABLE IF EXISTS xa_jobs", "DROP TABLE IF EXISTS xa_jobs_other",
                "CREATE TABLE xa_jobs (id INT PRIMARY KEY, v VARCHAR(20))",
                "CREATE TABLE xa_jobs_other (id INT PRIMARY KEY, v VARCHAR(20))")
    conn = mariadb.connect()
    try:
        mariadb.sql("FLUSH BINARY LOGS")
        start = mariadb.binlog_end()
        prepare(conn, "xa-jobs", "INSERT INTO xa_jobs_other VALUES (1, 'o')",
                "INSERT INTO xa_jobs VALUES (1, 'a'), (2, 'b')")
        mariadb.sql("INSERT INTO xa_jobs VALUES (3, 'c')", "FLUSH BINARY LOGS",
                    "INSERT INTO xa_jobs VALUES (4, 'd')", "FLUSH BINARY LOGS")
        conn.cursor().execute("XA COMMIT 'xa-jobs'")
        mariadb.sql("INSERT INTO xa_jobs VALUES (5, 'e')")
    finally:
        conn.close()

    def closed_files() -> list[str]:
        """The files from `start` on, the server's current one left out: it writes a
        BINLOG_CHECKPOINT there when it gets to it, between any two decodes."""
        mariadb.sql("FLUSH BINARY LOGS")
        files = sorted(str(p) for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*"))
        return files[[Path(f).name for f in files].index(start[0]):-1]

    files = closed_files()
    assert len(files) == 3

    def decode(*args: str):
        return CliRunner().invoke(main, ["decode", *args], catch_exceptions=False)

    for extra in ((), ("--tables", f"{SCHEMA}.xa_jobs")):
        want = decode(*extra, *files)
        got = decode("--jobs", "3", *extra, *files)
        assert want.exit_code == got.exit_code == 0 and got.stdout == want.stdout
        recs = [json.loads(line) for line in got.stdout.splitlines()]
        mine = [r for r in recs if r["table"] == "xa_jobs"]
        assert [r["after"]["id"] for r in mine] == [3, 4, 1, 2, 5]  # 1, 2 at the COMMIT
        assert {r["position"]["file"] for r in mine[2:4]} == {Path(files[2]).name}
        assert [r["position"]["row"] for r in mine[2:4]] == [1, 2]  # after xa_jobs_other's
    # files cut in pieces of 300 bytes: the PREPARE found in an earlier piece of a file too
    import io

    from binlake.cli.decode_command import DecodeSpec, decode_in_order, decode_in_parallel

    conn = mariadb.connect()
    try:
        prepare(conn, "xa-jobs-2", "INSERT INTO xa_jobs VALUES (6, 'f')")
        mariadb.sql("INSERT INTO xa_jobs VALUES (7, 'g')", "INSERT INTO xa_jobs VALUES (8, 'h')")
        conn.cursor().execute("XA COMMIT 'xa-jobs-2'")
    finally:
        conn.close()
    more = closed_files()
    assert more[:3] == files and len(more) == 4
    for tables in (None, f"{SCHEMA}.xa_jobs"):
        spec = DecodeSpec(files=tuple(more), tables=tables)
        want, got = io.StringIO(), io.StringIO()
        assert decode_in_parallel(spec, 2, got, piece_bytes=300) == decode_in_order(spec, want)
        assert got.getvalue() == want.getvalue()
        ids = [(r["after"]["id"], r["position"]["pos"]) for r in map(json.loads, got.getvalue().splitlines())
               if r["table"] == "xa_jobs"]
        assert [i for i, _ in ids] == [3, 4, 1, 2, 5, 7, 8, 6]
        assert ids[-1][1] - ids[5][1] > 300  # the commit is pieces after its PREPARE
    want = CliRunner().invoke(main, ["decode", *files[1:]])
    got = CliRunner().invoke(main, ["decode", "--jobs", "2", *files[1:]])
    assert want.exit_code == got.exit_code == 2 and "XA COMMIT" in got.stderr
    assert (got.stdout, got.stderr) == (want.stdout, want.stderr)
