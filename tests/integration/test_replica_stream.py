"""The live replica against the shared MariaDB: concurrent writers, start positions,
heartbeats and dead links.

Expected changes come from two independent sources: the writer's own model of the table
(values), and `binlake decode` of the server's binlog files (positions and order)."""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from binlake.cli.program import main
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL

from tcpproxy import TcpProxy  # tests/integration is on sys.path (rootdir-less test dirs)

SCHEMA = "binlake_test"



def decoded(server, table: str, start: tuple[str, int], end: tuple[str, int]) -> list[dict]:
    """`binlake decode` of every binlog file, the rows of `table` between two positions."""
    files = sorted(str(p) for p in Path(server.binlog_dir).glob("mariadb-bin.[0-9]*"))
    res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.{table}", *files],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = []
    for line in res.output.splitlines():
        rec = json.loads(line)
        at = (rec["position"]["file"], rec["position"]["pos"])
        if start <= at < end:
            out.append(rec)
    return out


def stream_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["stream", *args])
    return res.exit_code, res.output


class watchdog:
    """Stop a stream that did not finish in time (the test then fails on what it got)."""

    def __init__(self, bs: BinlogStream, seconds: float) -> None:
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire, args=(bs,))
        self._timer.daemon = True
        self._timer.start()

    def _fire(self, bs: BinlogStream) -> None:
        self.fired = True
        bs.request_stop()

    def cancel(self) -> None:
        self._timer.cancel()


def url_of(server) -> ServerURL:
    return ServerURL.parse(server.url)


# -- concurrent writer ---------------------------------------------------------------------------

def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (format(v, "f") if isinstance(v, Decimal) else v) for k, v in row.items()}


def _writer(server, table: str, txs: int, expected: list[tuple], done: dict, seed: int) -> None:
    """Multi-statement transactions of inserts, updates and deletes (some rolled back); records
    the changes each committed transaction must produce, in commit order."""
    rng = random.Random(seed)
    model: dict[int, dict[str, Any]] = {}
    conn = server.connect()
    cur = conn.cursor()
    next_id = 1
    for t in range(txs):
        cur.execute("BEGIN")
        changes: list[tuple] = []
        shadow = {k: dict(v) for k, v in model.items()}
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.2:
                cur.execute(f"SAVEPOINT sp{t}")  # a query event inside the group, not its end
            op = rng.choice(["insert", "insert", "update", "delete"]) if shadow else "insert"
            if op == "insert":
                rows = []
                for _ in range(rng.randint(1, 3)):
                    row = {"id": next_id, "v": f"t{t}-{'é' * rng.randint(0, 3)}{rng.random():.6f}",
                           "n": rng.randint(-2**63, 2**63 - 1), "d": (Decimal(rng.randint(-99999, 99999)) / 100).quantize(Decimal("0.01"))}
                    next_id += 1
                    rows.append(row)
                    shadow[row["id"]] = row
                    changes.append(("insert", None, _jsonable(row)))
                cur.executemany(f"INSERT INTO {table} (id, v, n, d) VALUES (%s, %s, %s, %s)",
                                [(r["id"], r["v"], r["n"], r["d"]) for r in rows])
            elif op == "update":
                key = rng.choice(sorted(shadow))
                before = dict(shadow[key])
                after = dict(before, v=f"u{t}", n=before["n"] // 2)
                cur.execute(f"UPDATE {table} SET v=%s, n=%s WHERE id=%s", (after["v"], after["n"], key))
                shadow[key] = after
                changes.append(("update", _jsonable(before), _jsonable(after)))
            else:
                key = rng.choice(sorted(shadow))
                changes.append(("delete", _jsonable(shadow.pop(key)), None))
                cur.execute(f"DELETE FROM {table} WHERE id=%s", (key,))
        if rng.random() < 0.15:
            cur.execute("ROLLBACK")  # never in the binlog, so never streamed
            continue
        cur.execute("COMMIT")
        model = shadow
        expected.extend((t, *c) for c in changes)
        done["txs"] = done.get("txs", 0) + 1
    done["end"] = server.binlog_end_gtid()
    # One more (filtered-out) commit, so the stream sees a boundary at or past the end even
    # if it had already passed the writer's last commit when "end" was taken.
    cur.execute("CREATE TABLE IF NOT EXISTS rs_sentinel (id INT PRIMARY KEY AUTO_INCREMENT)")
    cur.execute("INSERT INTO rs_sentinel VALUES ()")
    conn.close()


def test_concurrent_writer_every_change_once_in_commit_order(mariadb) -> None:
    table = "rs_concurrent"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}",
                f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(64) CHARACTER SET utf8mb4, "
                "n BIGINT, d DECIMAL(10,2))")
    server_id = 7101
    started = threading.Event()
    expected: list[tuple] = []
    done: dict[str, Any] = {}
    commits: list[Position] = []
    slave_hosts: list[tuple] = []

    def on_commit(pos: Position) -> None:
        commits.append(pos)
        end = done.get("end")
        if end is not None and (pos.file, pos.pos) >= end[:2]:
            bs.request_stop()

    bs = BinlogStream(url_of(mariadb), StreamOptions(
        server_id=server_id, heartbeat=0.5, tables=lambda s, t: t == table,
        on_commit=on_commit, on_stream_start=lambda p: started.set()))
    start = {}

    def write() -> None:
        assert started.wait(10)
        start["at"] = mariadb.binlog_end_gtid()
        _writer(mariadb, table, 80, expected, done, seed=20240601)

    writer = threading.Thread(target=write)
    writer.start()
    dog = watchdog(bs, 60)
    got = []
    for rec in bs.changes():
        got.append(rec)
        if len(got) == 1:
            slave_hosts.extend(mariadb.sql("SHOW SLAVE HOSTS", database=None))
    dog.cancel()
    writer.join()
    assert "end" in done, "writer did not finish"
    assert not dog.fired, f"the stream did not reach the writer's end {done['end']}"
    assert commits and (commits[-1].file, commits[-1].pos) >= done["end"][:2]

    # One boundary per committed transaction, none inside one (SAVEPOINT is no boundary).
    inside = [c for c in commits if start["at"][:2] < (c.file, c.pos) <= done["end"][:2]]
    assert len(inside) == done["txs"]
    assert all(c.rows_done == 0 and c.tx_gtid is None for c in commits)
    # Registered as a replica under its own server id while streaming.
    assert any(int(r[0]) == server_id and r[1] == "binlake" for r in slave_hosts), slave_hosts
    # Every change once, in commit order, with the values the writer wrote.
    assert len(expected) > 150
    actual = [(r.op, r.to_json_dict().get("before"), r.to_json_dict().get("after")) for r in got]
    assert actual == [e[1:] for e in expected]
    # One GTID per committed transaction, increasing; positions strictly increasing.
    positions = [r.position for r in got]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    tx_of_gtid: dict[str, int] = {}
    for rec, exp in zip(got, expected):
        assert tx_of_gtid.setdefault(rec.gtid, exp[0]) == exp[0]
    seqs = [int(g.rsplit("-", 1)[1]) for g in tx_of_gtid]
    assert seqs == sorted(seqs) and len(seqs) == len({e[0] for e in expected})
    # Same records as the binlog files say, byte for byte.
    ref = decoded(mariadb, table, start["at"][:2], done["end"][:2])
    assert [r.to_json_dict() for r in got] == ref
    assert bs.reconnects == 0


# -- start positions ---------------------------------------------------------------------------------

def test_file_and_gtid_starts_and_until_end(mariadb, tmp_path: Path) -> None:
    table = "rs_starts"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
    marks = []
    for i in range(6):
        marks.append(mariadb.binlog_end_gtid())
        mariadb.sql("BEGIN", f"INSERT INTO {table} VALUES ({2 * i}, {i}), ({2 * i + 1}, {i})",
                    f"UPDATE {table} SET v = v + 100 WHERE id = {2 * i}", "COMMIT")
    end = mariadb.binlog_end_gtid()
    file, pos, gtid = marks[2]
    ref = decoded(mariadb, table, (file, pos), end[:2])
    assert len(ref) == 4 * 3

    out = tmp_path / "by-file.jsonl"
    code, text = stream_cli(mariadb.url, "--start", f"{file}:{pos}", "--until-end", "--tables",
                            f"{SCHEMA}.{table}", "--heartbeat", "0.5", "--out", str(out))
    assert code == 0, text
    assert [json.loads(x) for x in out.read_text().splitlines()] == ref

    out = tmp_path / "by-gtid.jsonl"
    code, text = stream_cli(mariadb.url, "--gtid", gtid, "--until-end", "--tables", f"{SCHEMA}.{table}",
                            "--heartbeat", "0.5", "--out", str(out))
    assert code == 0, text
    assert [json.loads(x) for x in out.read_text().splitlines()] == ref

    # --until-end stops at the end as of connecting, also with nothing to stream.
    code, text = stream_cli(mariadb.url, "--gtid", end[2], "--until-end", "--heartbeat", "0.5")
    assert code == 0 and text == ""


def test_gtid_start_tracks_gtid_state_and_file_start_tracks_files(mariadb) -> None:
    """A GTID start keeps resuming by GTID; a file start by file:pos (no guessed GTIDs)."""
    table = "rs_modes"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    f, p, g = mariadb.binlog_end_gtid()
    mariadb.sql(f"INSERT INTO {table} VALUES (1)", f"INSERT INTO {table} VALUES (2)")
    end = mariadb.binlog_end_gtid()
    for start, mode in ((Position(gtid_state=g), "mariadb-gtid"), (Position(f, p), "file")):
        bs = BinlogStream(url_of(mariadb), StreamOptions(start=start, until_end=True, heartbeat=0.5,
                                                         tables=lambda s, t: t == table))
        ids = [r.after["id"] for r in bs.changes()]
        assert ids == [1, 2]
        assert bs.position.mode == mode
        assert (bs.position.file, bs.position.pos) == end[:2]
        if mode == "mariadb-gtid":
            assert bs.position.gtid_state == end[2]


# -- heartbeats and dead links -------------------------------------------------------------------------

def test_quiet_primary_sends_heartbeats_and_no_reconnects(mariadb) -> None:
    table = "rs_quiet"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    started = threading.Event()
    bs = BinlogStream(url_of(mariadb), StreamOptions(heartbeat=0.5, tables=lambda s, t: t == table,
                                                     on_stream_start=lambda p: started.set()))
    seen: dict[str, int] = {}

    def later() -> None:
        assert started.wait(10)
        seen["events_before"] = bs.events_seen
        time.sleep(2.6)  # 5 heartbeat periods, 1.7 read timeouts, of silence
        seen["events_after"] = bs.events_seen
        mariadb.sql(f"INSERT INTO {table} VALUES (1)")

    t = threading.Thread(target=later)
    t.start()
    dog = watchdog(bs, 20)
    for rec in bs.changes():
        assert rec.after == {"id": 1}
        break
    dog.cancel()
    t.join()
    bs.close()
    assert not dog.fired
    assert bs.reconnects == 0
    assert seen["events_after"] - seen["events_before"] >= 4  # the heartbeats


def test_dead_link_is_detected_within_three_heartbeats(mariadb, caplog) -> None:
    table = "rs_deadlink"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    base = url_of(mariadb)
    url = ServerURL("127.0.0.1", proxy.port, base.user, base.password, {"ssl_mode": "DISABLED"})
    started = threading.Event()
    bs = BinlogStream(url, StreamOptions(heartbeat=0.5, tables=lambda s, t: t == table,
                                         on_stream_start=lambda p: started.set()))
    froze: dict[str, float] = {}

    def act() -> None:
        assert started.wait(10)
        mariadb.sql(f"INSERT INTO {table} VALUES (1)")
        time.sleep(0.8)
        proxy.freeze()
        froze["at"], froze["wall"] = time.monotonic(), time.time()
        mariadb.sql(f"INSERT INTO {table} VALUES (2)", f"INSERT INTO {table} VALUES (3)")

    t = threading.Thread(target=act)
    t.start()
    dog = watchdog(bs, 30)
    ids, arrived = [], {}
    caplog.set_level(logging.WARNING, logger="binlake.replica")
    try:
        for rec in bs.changes():
            ids.append(rec.after["id"])
            arrived[rec.after["id"]] = time.monotonic()
            if len(ids) == 3:
                break
    finally:
        dog.cancel()
        t.join()
        bs.close()
        proxy.close()
    assert not dog.fired
    assert ids == [1, 2, 3]
    assert bs.reconnects == 1 and proxy.links_opened == 2
    lost = [r for r in caplog.records if "reconnecting" in r.getMessage()]
    assert len(lost) == 1
    detected = lost[0].created - froze["wall"]
    assert 1.0 <= detected <= 2.5, detected  # 3 periods of 0.5 s, not the 5 s floor of before
    assert arrived[2] - froze["at"] < 4.5


def test_statement_records_and_resume_between_them(mariadb) -> None:
    """TRUNCATE and statement-logged DML come out as records, as `binlake decode` makes them,
    and a stop right after one of them (inside a transaction) resumes right after it."""
    table = "rs_stmt"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)",
                "DROP TABLE IF EXISTS rs_stmt_other", "CREATE TABLE rs_stmt_other (id INT PRIMARY KEY)")
    f, p, _ = mariadb.binlog_end_gtid()
    mariadb.sql(f"INSERT INTO {table} VALUES (1, 1), (2, 2)",
                "SET SESSION binlog_format = 'STATEMENT'",
                "BEGIN", f"INSERT INTO {table} VALUES (3, 3)", "INSERT INTO rs_stmt_other VALUES (1)",
                f"UPDATE {table} SET v = v + 1", "COMMIT",
                "SET SESSION binlog_format = 'ROW'",
                "TRUNCATE TABLE rs_stmt_other", f"TRUNCATE TABLE {table}",
                f"INSERT INTO {table} VALUES (4, 4)")
    end = mariadb.binlog_end_gtid()
    ref = decoded(mariadb, table, (f, p), end[:2])
    assert [r["op"] for r in ref] == ["insert", "insert", "statement", "statement", "truncate", "insert"]

    def stream(start: Position, stop_after: int | None) -> tuple[list[dict], Position]:
        bs = BinlogStream(url_of(mariadb), StreamOptions(start=start, until_end=True, heartbeat=0.5,
                                                         tables=lambda s, t: t == table))
        out = []
        for rec in bs.changes():
            out.append(rec.to_json_dict())
            if len(out) == stop_after:
                bs.request_stop()
        bs.close()
        return out, bs.position

    first, pos = stream(Position(f, p), stop_after=3)
    assert len(first) == 3 and pos.rows_done == 1  # one statement of the other table's transaction
    rest, end_pos = stream(pos, stop_after=None)
    assert first + rest == ref
    assert (end_pos.file, end_pos.pos) == end[:2] and end_pos.rows_done == 0


def test_quiet_primary_lets_the_checkpoint_catch_up(mariadb, tmp_path: Path) -> None:
    """Checkpoints are throttled during bursts; the heartbeats of a quiet primary store the
    last position, so a crash then re-reads nothing."""
    import signal
    import subprocess
    import sys

    table = "rs_idle"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    ckpt, out = tmp_path / "ckpt.json", tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "stream", mariadb.url, "--heartbeat", "0.3",
                             "--tables", f"{SCHEMA}.{table}", "--checkpoint", str(ckpt), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while not ckpt.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "no first checkpoint"
            time.sleep(0.02)
        conn = mariadb.connect()
        for i in range(60):  # a burst: many commits within the 0.2 s throttle
            conn.cursor().execute(f"INSERT INTO {table} VALUES ({i})")
        conn.close()
        end = mariadb.binlog_end_gtid()
        deadline = time.monotonic() + 5
        while True:
            saved = json.loads(ckpt.read_text())
            if saved["position"]["gtid_state"] == end[2]:
                break
            assert time.monotonic() < deadline, (saved, end)
            time.sleep(0.05)
        assert (saved["position"]["file"], saved["position"]["pos"]) == end[:2]
        assert saved["extra"]["out_bytes"] == out.stat().st_size
        assert len(out.read_text().splitlines()) == 60
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()


def test_small_transactions_come_in_packet_runs(mariadb, monkeypatch) -> None:
    """One-row transactions (GTID, TABLE_MAP, rows, XID) are read by runs over the received
    packets, all four events, not three of them the general way; transactions that mix a
    left-out table in, or hold only its rows, have those passed over inside the run. Every
    kept change comes once, in order, at the resume point an unfiltered stream gives it,
    and a stop position between two of those transactions ends the stream there."""
    from binlake.binlog.decoder import BinlogDecoder

    if BinlogDecoder()._scanner is None:
        pytest.skip("no C extension: no runs over received packets")
    keep, other = "rs_small", "rs_other"
    mariadb.sql(*(f"DROP TABLE IF EXISTS {t}" for t in (keep, other)),
                *(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)" for t in (keep, other)))
    start = Position(*mariadb.binlog_end())
    mariadb.sql(*(f"INSERT INTO {keep} VALUES ({i}, {i * 7})" for i in range(40)))
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            for i in range(40, 60):  # the kept row between two left-out ones
                cur.execute("BEGIN")
                cur.execute(f"INSERT INTO {other} VALUES ({i}, 0), ({i + 1000}, 0)")
                cur.execute(f"INSERT INTO {keep} VALUES ({i}, {i * 7})")
                cur.execute(f"UPDATE {other} SET v = 1 WHERE id = {i}")
                conn.commit()
    finally:
        conn.close()
    mariadb.sql(*(f"INSERT INTO {other} VALUES ({i}, 2)" for i in range(2000, 2020)))
    url = url_of(mariadb)
    expected = [(i, i * 7) for i in range(60)]

    general, decoders = [0], []
    real_decode, real_scan = BinlogDecoder.decode_event, BinlogDecoder.scan_packets

    def counting_decode(self: BinlogDecoder, *args: object, **kw: object) -> object:
        general[0] += 1
        return real_decode(self, *args, **kw)

    def counting_scan(self: BinlogDecoder, *args: object, **kw: object) -> object:
        decoders.append(self)
        return real_scan(self, *args, **kw)

    def stream(tables=None, stop_at=None, commits=None) -> tuple[list, BinlogStream]:
        bs = BinlogStream(url, StreamOptions(
            start=start, until_end=True, heartbeat=0.5, tables=tables, stop_at=stop_at,
            on_commit=None if commits is None else commits.append))
        try:
            got = [((r.after["id"], r.after["v"]), bs.position) for r in bs.changes()
                   if r.table == keep]
        finally:
            bs.close()
        return got, bs

    commits: list[Position] = []
    every, whole = stream(commits=commits)
    monkeypatch.setattr(BinlogDecoder, "decode_event", counting_decode)
    monkeypatch.setattr(BinlogDecoder, "scan_packets", counting_scan)
    kept, bs = stream(tables=lambda s, t: t == keep)
    assert [v for v, _ in kept] == [v for v, _ in every] == expected
    # each kept record's resume point counts the left-out rows before it, as unfiltered
    assert [pos for _, pos in kept] == [pos for _, pos in every]
    assert bs.position == whole.position
    assert decoders, "no run over the received packets was started"
    scanner = decoders[-1]._scanner
    # 100 transactions of 4 to 8 events: nearly all taken by runs, the left-out tables'
    # rows events (20 * 2 inside the mixed ones, 20 alone) passed over inside them (but a
    # table's first event of each kind, which builds its decoders the general way)
    assert scanner.scanned >= 60 * 4 + 20 * 4 - 10
    assert scanner.skipped >= 20 * 2 + 20 - 4
    assert general[0] <= 12, f"{general[0]} events were read the general way"

    # A stop between two one-row transactions: the stream ends there, inside a run.
    stop = commits[9]
    got, bs = stream(tables=lambda s, t: t == keep, stop_at=(stop.file, stop.pos))
    assert [v for v, _ in got] == expected[:10]
    assert (bs.position.file, bs.position.pos) == (stop.file, stop.pos)
