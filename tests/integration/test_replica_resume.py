"""Resume without gaps or duplicates: `binlake stream` killed with -9 at random points (inside
a big transaction too) and restarted on its checkpoint, and an in-process stream whose TCP link
is cut twice inside a transaction (once while it is still skipping what it had delivered).

The reference is `binlake decode` of the server's binlog files over the same range: the output
must equal it line for line."""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from binlake.binlog.decoder import BinlogDecoder
from binlake.cli.program import main
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, ResumeMismatch, StreamOptions
from binlake.replica.url import ServerURL

from tcpproxy import TcpProxy  # tests/integration is on sys.path (rootdir-less test dirs)

SCHEMA = "binlake_test"



def decoded_lines(server, table: str, start: tuple[str, int], end: tuple[str, int]) -> list[str]:
    files = sorted(str(p) for p in Path(server.binlog_dir).glob("mariadb-bin.[0-9]*"))
    res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.{table}", *files],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = []
    for line in res.output.splitlines():
        p = json.loads(line)["position"]
        if start <= (p["file"], p["pos"]) < end:
            out.append(line)
    return out


def workload(server, table: str, big_rows: int, seed: int) -> dict:
    """Small transactions, one big multi-statement transaction, small ones again."""
    rng = random.Random(seed)
    server.sql(f"DROP TABLE IF EXISTS {table}",
               f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(100), n INT)")
    conn = server.connect()
    cur = conn.cursor()
    start = server.binlog_end()
    next_id = [1]

    def small(count: int) -> None:
        for _ in range(count):
            cur.execute("BEGIN")
            for _ in range(rng.randint(1, 3)):
                i = next_id[0]
                next_id[0] += 1
                cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"small-{i}", rng.randint(0, 9)))
                if i > 3 and rng.random() < 0.5:
                    cur.execute(f"UPDATE {table} SET n = n + 1 WHERE id = %s", (rng.randint(1, i - 1),))
                if i > 3 and rng.random() < 0.2:
                    cur.execute(f"DELETE FROM {table} WHERE id = %s", (rng.randint(1, i - 1),))
            cur.execute("COMMIT")

    small(60)
    big_start = server.binlog_end()
    cur.execute("BEGIN")
    chunk = 1000
    for lo in range(0, big_rows, chunk):
        ids = range(next_id[0] + lo, next_id[0] + min(lo + chunk, big_rows))
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", [(i, f"big-{i:08d}-" + "x" * 40, i % 97) for i in ids])
    cur.execute(f"UPDATE {table} SET n = -n WHERE id >= %s AND id MOD 3 = 0", (next_id[0],))
    cur.execute("COMMIT")
    next_id[0] += big_rows
    big_end = server.binlog_end()
    small(30)
    end = server.binlog_end()
    conn.close()
    return {"start": start, "big": (big_start, big_end), "end": end}


def test_kill9_at_random_points_then_resume_exactly_once(mariadb, tmp_path: Path) -> None:
    table = "rr_kill"
    w = workload(mariadb, table, big_rows=12000, seed=7)
    ref = decoded_lines(mariadb, table, w["start"], w["end"])
    text = "".join(line + "\n" for line in ref)
    big_gtid = next(json.loads(x)["gtid"] for x in ref if '"after":{"id":' in x and '"big-' in x)
    big = [i for i, line in enumerate(ref) if json.loads(line)["gtid"] == big_gtid]
    assert big == list(range(big[0], big[-1] + 1))
    offsets = [0]
    for line in ref:
        offsets.append(offsets[-1] + len(line) + 1)
    big_bytes = (offsets[big[0]], offsets[big[-1] + 1])
    assert big_bytes[1] - big_bytes[0] > len(text) // 2  # the big transaction dominates

    ckpt, out = tmp_path / "ckpt.json", tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "binlake.cli", "stream", mariadb.url, "--start",
           "{}:{}".format(*w["start"]), "--until-end", "--tables", f"{SCHEMA}.{table}",
           "--heartbeat", "0.5", "--checkpoint", str(ckpt), "--out", str(out)]
    rng = random.Random(11)
    lo, hi = big_bytes
    kill_at = sorted([rng.randrange(1, lo), rng.randrange(lo, (lo + hi) // 2),
                      rng.randrange((lo + hi) // 2, hi), rng.randrange(lo, hi), rng.randrange(hi, len(text))])
    killed_at: list[int] = []  # output size on disk when each run was stopped
    resumed_from: list[int | None] = []  # out_bytes of the checkpoint each restart found
    for i, threshold in enumerate(kill_at):
        resumed_from.append(json.loads(ckpt.read_text())["extra"]["out_bytes"] if ckpt.exists() else None)
        sig = signal.SIGTERM if i == 2 else signal.SIGKILL
        # SIGTERM is a graceful stop once the stream runs: wait for this run's first
        # checkpoint save (a previous run's output can be past the threshold until this
        # one truncates it, and a SIGTERM during start-up would find no handler yet).
        before = ckpt.stat().st_mtime_ns if ckpt.exists() else None
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            running = sig == signal.SIGKILL or (
                ckpt.exists() and ckpt.stat().st_mtime_ns != before)
            if running and out.exists() and out.stat().st_size >= threshold:
                break
            time.sleep(0.001)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        if sig == signal.SIGTERM:
            assert proc.returncode == 0, err.decode()
            saved = json.loads(ckpt.read_text())
            # Stopped inside the big transaction: the checkpoint counts the rows it wrote.
            assert saved["position"].get("rows_done", 0) > 0, saved
            assert saved["extra"]["out_bytes"] == out.stat().st_size
        elif i < len(kill_at) - 1:
            assert proc.returncode == -signal.SIGKILL, err.decode()
        else:  # past the big transaction the rest is quick: it may have finished first
            assert proc.returncode in (0, -signal.SIGKILL), err.decode()
        killed_at.append(out.stat().st_size)
    resumed_from.append(json.loads(ckpt.read_text())["extra"]["out_bytes"])
    proc = subprocess.run(cmd, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()

    assert out.read_text().splitlines() == ref  # every change exactly once, in order, same bytes
    # The stops landed where intended: several inside the big transaction.
    assert sum(lo < s < hi for s in killed_at) >= 2, (killed_at, big_bytes)
    # Restarts threw away output written after the last checkpoint (a kill inside the big
    # transaction leaves its rows uncommitted, so the checkpoint is at its start).
    assert any(r is not None and r < s for s, r in zip(killed_at, resumed_from[1:])), \
        (killed_at, resumed_from)


def test_link_cut_inside_a_transaction_resumes_in_process(mariadb) -> None:
    table = "rr_cut"
    w = workload(mariadb, table, big_rows=6000, seed=3)
    ref = decoded_lines(mariadb, table, w["start"], w["end"])
    (b0, b1) = (w["big"][0][1], w["big"][1][1])
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    setup = 3000  # handshake, setup queries, fake ROTATE and FDE: small next to the transaction
    before_big = setup + (b0 - w["start"][1])
    # 1st link: cut 40% into the big transaction; 2nd: 20% in, while it still skips what the
    # 1st delivered; the 3rd completes.
    proxy.cut_after(before_big + int(0.4 * (b1 - b0)), before_big + int(0.2 * (b1 - b0)))
    base = ServerURL.parse(mariadb.url)
    url = ServerURL("127.0.0.1", proxy.port, base.user, base.password, {"ssl_mode": "DISABLED"})
    bs = BinlogStream(url, StreamOptions(start=Position(*w["start"]), until_end=True, heartbeat=0.5,
                                         tables=lambda s, t: t == table))
    got, epochs = [], []
    try:
        for rec in bs.changes():
            got.append(json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":")))
            epochs.append((bs.reconnects, rec.gtid, bs.position.rows_done))
    finally:
        bs.close()
        proxy.close()
    assert bs.reconnects == 2 and proxy.links_opened == 3
    assert got == ref  # no duplicates, no gaps, same order and values
    first = [e for e in epochs if e[0] == 0]
    third = [e for e in epochs if e[0] == 2]
    assert not [e for e in epochs if e[0] == 1], "the 2nd link was cut while skipping"
    # The cut was inside the big transaction: it continues across the reconnects.
    assert first[-1][1] == third[0][1] and first[-1][2] > 0 and third[0][2] == first[-1][2] + 1


@pytest.mark.parametrize("runs", [True, False])
def test_link_cut_where_left_out_rows_are_passed_over_resumes_exactly(
        mariadb, runs: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction mixing a kept table with a left-out one: the stream's runs pass the
    left-out rows events over and count their rows; cut twice inside it, it must resume
    after exactly the rows it had delivered (the count includes the left-out ones). The
    same without runs (a decoder that cannot scan packets: no C extension, an encrypted
    binlog), where every event goes the general way."""
    if not runs:
        monkeypatch.setattr(BinlogDecoder, "scan_packets", lambda self, *args, **kw: None)
    kept, left = f"rr_mix_kept_{runs:d}", f"rr_mix_left_{runs:d}"
    mariadb.sql(f"DROP TABLE IF EXISTS {kept}", f"DROP TABLE IF EXISTS {left}",
                f"CREATE TABLE {kept} (id INT PRIMARY KEY, v VARCHAR(100))",
                f"CREATE TABLE {left} (id INT PRIMARY KEY, v VARCHAR(100))")
    conn = mariadb.connect()
    cur = conn.cursor()
    start = mariadb.binlog_end()
    cur.execute("BEGIN")
    for lo in range(0, 6000, 300):  # statements of each table in turn, several events each
        cur.executemany(f"INSERT INTO {left} VALUES (%s, %s)",
                        [(i, f"left-{i:06d}-" + "y" * 60) for i in range(lo, lo + 300)])
        cur.executemany(f"INSERT INTO {kept} VALUES (%s, %s)",
                        [(i, f"kept-{i:06d}-" + "x" * 60) for i in range(lo, lo + 100)])
    cur.execute("COMMIT")
    end = mariadb.binlog_end()
    conn.close()
    files = sorted(str(p) for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*"))
    res = CliRunner().invoke(main, ["decode", "--tables", f"{SCHEMA}.{kept}", "--start-position",
                                    "4", *files], catch_exceptions=False)  # (every event seen)
    ref = [line for line in res.output.splitlines()
           if start <= tuple(json.loads(line)["position"][k] for k in ("file", "pos")) < end]
    assert len(ref) == 2000
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    # ~640 KB of rows events go out (the statements' annotations stay on the primary): the
    # 1st link is cut about halfway, the 2nd a quarter in, while it still skips rows.
    proxy.cut_after(3000 + 300_000, 3000 + 150_000)
    base = ServerURL.parse(mariadb.url)
    url = ServerURL("127.0.0.1", proxy.port, base.user, base.password, {"ssl_mode": "DISABLED"})
    bs = BinlogStream(url, StreamOptions(start=Position(*start), until_end=True, heartbeat=0.5,
                                         tables=lambda s, t: t == kept))
    got, done = [], []
    try:
        for rec in bs.changes():
            got.append(json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":")))
            done.append((bs.reconnects, bs.position.rows_done))
    finally:
        bs.close()
        proxy.close()
    assert bs.reconnects == 2 and proxy.links_opened == 3
    assert got == ref  # no duplicates, no gaps
    # rows_done counts the left-out rows too: 300 of them come before each 100 kept ones
    assert [d for _, d in done] == [400 * (j // 100) + 300 + j % 100 + 1 for j in range(2000)]
    assert done[0][0] == 0 and done[-1][0] == 2


@pytest.mark.parametrize("runs", [True, False])
def test_a_checkpoint_that_does_not_fit_the_binlog_is_refused(
        mariadb, runs: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A position inside a transaction names that transaction's GTID and how many rows were
    delivered. If the binlog at the boundary holds another transaction, or a shorter one,
    resuming would skip or repeat rows: the stream must refuse, naming both, before it
    hands out anything (with the C runs over packets and without)."""
    if not runs:
        monkeypatch.setattr(BinlogDecoder, "scan_packets", lambda self, *args, **kw: None)
    table = f"rr_misfit_{runs:d}"
    mariadb.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    start = mariadb.binlog_end()
    (first,), = mariadb.sql(f"INSERT INTO {table} VALUES (1), (2)", "SELECT @@last_gtid")
    mariadb.sql(f"INSERT INTO {table} VALUES (3)")
    domain, server, seq = (int(x) for x in first.split("-"))  # the two-row transaction at `start`

    got: list = []

    def resume(rows_done: int, tx_gtid: str) -> list:
        bs = BinlogStream(ServerURL.parse(mariadb.url), StreamOptions(
            start=Position(*start, rows_done=rows_done, tx_gtid=tx_gtid), until_end=True,
            tables=lambda s, t: t == table))
        got.clear()
        try:
            for rec in bs.changes():
                got.append(rec)
        finally:
            bs.close()
        return got

    # the checkpoint's own transaction: the row after the one delivered, then the next
    assert [rec.after["id"] for rec in resume(1, first)] == [2, 3]
    with pytest.raises(ResumeMismatch, match=rf"resuming inside transaction {domain}-{server}-"
                                             rf"{seq + 9}, but the primary sent {first} first"):
        resume(1, f"{domain}-{server}-{seq + 9}")
    assert got == []
    with pytest.raises(ResumeMismatch, match=rf"the resumed transaction {first} ended after "
                                             r"fewer rows than the checkpoint had delivered"):
        resume(3, first)
    assert got == []  # (the transaction's rows were all skipped as delivered)
