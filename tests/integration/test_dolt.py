"""Interop with Dolt, a MySQL-flavour primary written by others (Go, go-mysql-server): a
GTID stream with --until-end gets every change. Runs where a `dolt` binary is on PATH (how
to build one: README.md, "Tests"); skipped with the reason otherwise."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from streamcollect import wait_started, wait_written  # tests/integration is on sys.path

DOLT = shutil.which("dolt")
pytestmark = pytest.mark.skipif(
    DOLT is None, reason="no `dolt` binary on PATH: build one from its Go module (README.md, Tests)")

USER, PASSWORD = "binlake", "binlake-pw"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Dolt:
    def __init__(self, base: Path) -> None:
        self.dir = base / "doltdb"
        self.dir.mkdir()
        self.env = dict(os.environ, HOME=str(base), DOLT_DISABLE_EVENT_FLUSH="1")
        self.port = _free_port()
        self.url = f"mysql://{USER}:{PASSWORD}@127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def cli(self, *args: str) -> str:
        r = subprocess.run([DOLT, *args], cwd=self.dir, env=self.env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    def start(self) -> None:
        self.cli("init", "--name=binlake", "--email=binlake@example.com")
        self.cli("sql", "-q", f"CREATE USER {USER}@'%' IDENTIFIED WITH mysql_native_password "
                              f"BY '{PASSWORD}'; GRANT ALL ON *.* TO {USER}@'%';")
        for var, value in (("log_bin", "1"), ("gtid_mode", "ON"), ("enforce_gtid_consistency", "ON")):
            self.cli("sql", "-q", f"SET @@PERSIST.{var}={value};")
        self.run()

    def run(self) -> None:
        self.log = open(self.dir.parent / "dolt.log", "a")
        self.proc = subprocess.Popen([DOLT, "sql-server", "--host=127.0.0.1", f"--port={self.port}",
                                      "--socket=/dev/null"], cwd=self.dir, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert self.proc.poll() is None, (self.dir.parent / "dolt.log").read_text()
                assert time.monotonic() < deadline, "dolt sql-server did not listen within 60 s"
                time.sleep(0.2)

    def sql(self, *statements: str) -> list[tuple]:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=self.port, user=USER, password=PASSWORD,
                               database=self.dir.name, autocommit=True)
        try:
            with conn.cursor() as cur:
                rows: list[tuple] = []
                for stmt in statements:
                    cur.execute(stmt)
                    rows = list(cur.fetchall())
                return rows
        finally:
            conn.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


@pytest.fixture(scope="module")
def dolt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dolt]:
    server = Dolt(tmp_path_factory.mktemp("dolt"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _stream(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "binlake.cli", "stream", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_fresh_primary_with_gtids_on_streams_by_gtid(dolt: Dolt) -> None:
    """Nothing executed yet: an empty Executed_Gtid_Set is not "GTIDs off" (Dolt answers a
    file-position dump with 1047)."""
    r = _stream(dolt.url, "--until-end", "--heartbeat", "1")
    assert r.returncode == 0, r.stderr
    assert "1047" not in r.stderr


def test_gtid_until_end_gets_every_change(dolt: Dolt) -> None:
    dolt.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
    (_, _, _, _, executed), = dolt.sql("SHOW MASTER STATUS")
    assert executed, "gtid_mode=ON: the CREATE TABLE has a GTID"
    dolt.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')", "UPDATE t SET v = 'c' WHERE id = 2",
             "DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (3, 'd')")
    t0 = time.monotonic()
    r = _stream(dolt.url, "--gtid", executed.replace("\n", ""), "--until-end", "--tables", "*.t")
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 30  # stopped at the end, not at a timeout
    recs = [json.loads(line) for line in r.stdout.splitlines()]

    def key(rec: dict) -> int:
        image = rec.get("after") or rec.get("before")
        return image["id"] if "id" in image else image["@1"]  # (@1: no schema history)

    # Dolt logs each transaction's net change per table (each statement here is one).
    assert [(x["op"], key(x)) for x in recs if x["op"] != "ddl"] == [
        ("insert", 1), ("insert", 2), ("update", 2), ("delete", 1), ("insert", 3)]


def test_full_metadata_with_a_charset_entry_per_column(dolt: Dolt) -> None:
    """Dolt's COLUMN_CHARSET lists every column (0 for non-character ones)."""
    try:
        dolt.sql("SET @@GLOBAL.binlog_row_metadata = 'FULL'")
    except Exception as exc:  # (pymysql's errors)
        pytest.skip(f"this dolt does not take binlog_row_metadata=FULL: {exc}")
    try:
        dolt.sql("CREATE TABLE m (id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(20), n INT)")
        (_, _, _, _, executed), = dolt.sql("SHOW MASTER STATUS")
        dolt.sql("INSERT INTO m VALUES (18446744073709551615, 'ü', -3)")
        r = _stream(dolt.url, "--gtid", executed.replace("\n", ""), "--until-end", "--tables", "*.m")
    finally:
        dolt.sql("SET @@GLOBAL.binlog_row_metadata = 'MINIMAL'")
    assert r.returncode == 0, r.stderr
    assert "unknown collation" not in r.stderr
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    # Dolt writes no signedness field even with FULL: the BIGINT UNSIGNED comes out signed,
    # and the stream says so.
    assert [x["after"] for x in recs if x["op"] == "insert"] == [{"id": -1, "name": "ü", "n": -3}]
    assert "m: the binlog does not say which integer columns are UNSIGNED (id, n are read" in r.stderr


def test_a_commit_reaches_out_and_checkpoint_at_once(dolt: Dolt, tmp_path: Path) -> None:
    """Dolt goes quiet after a commit (its heartbeat comes every 30 s): the transaction's
    line and checkpoint do not wait for it."""
    dolt.sql("CREATE TABLE q (id INT PRIMARY KEY)")
    out, ckpt = tmp_path / "out.jsonl", tmp_path / "ckpt.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "stream", dolt.url, "--tables",
                             "*.q", "--checkpoint", str(ckpt), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        wait_started(proc, ckpt)
        dolt.sql("INSERT INTO q VALUES (1)", "INSERT INTO q VALUES (2)")
        wait_written(out, ckpt, 2, within=3)
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_its_own_heartbeat_period_is_warned_about_once(dolt: Dolt, tmp_path: Path) -> None:
    """Dolt ignores @master_heartbeat_period (one every 30 s): one reconnect and one warning,
    then the stream waits longer instead of reconnecting at every idle spell."""
    dolt.sql("CREATE TABLE h (id INT PRIMARY KEY)")
    out = tmp_path / "out.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "stream", dolt.url, "--tables",
                             "*.h", "--heartbeat", "1", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(8)  # two spells of 3 s without a heartbeat
        dolt.sql("INSERT INTO h VALUES (1)")
        deadline = time.monotonic() + 5
        while not (out.exists() and out.read_text().count("\n") == 1):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert err.count("sent no heartbeat within 3 s") == 1, err
    assert err.count("reconnecting") == 1, err


def test_a_resume_across_a_restart_gets_every_transaction_or_names_the_hole(
        dolt: Dolt, tmp_path: Path) -> None:
    """A transaction written just before a Dolt restart: a stream resuming before it either
    gets it, or stops with the checkpoint as it was: naming the missing GTID (a Dolt that
    picks the file by its first GTID only skips it), or the positions that went back (Dolt
    2.3 sends the new file's events without a ROTATE); never a silent hole."""
    dolt.sql("CREATE TABLE g (id INT PRIMARY KEY)")
    ckpt = tmp_path / "ckpt.json"
    args = ("--until-end", "--checkpoint", str(ckpt), "--tables", "*.g", "--no-schema-history")
    r = _stream(dolt.url, *args)
    assert r.returncode == 0, r.stderr
    before = json.loads(ckpt.read_text())["position"]["gtid_set"]
    dolt.sql("INSERT INTO g VALUES (1)")
    dolt.stop()
    dolt.run()
    dolt.sql("INSERT INTO g VALUES (2)")
    r = _stream(dolt.url, *args)
    if r.returncode == 0:
        assert [json.loads(x)["after"]["@1"] for x in r.stdout.splitlines()] == [1, 2], r.stdout
    else:
        hole = "skipped transactions" in r.stderr and "missing" in r.stderr
        went_back = "positions went back inside one binlog file" in r.stderr
        assert hole or went_back, r.stderr
        assert len(r.stderr.strip().splitlines()) <= 3, r.stderr  # a message, no traceback
        assert "Traceback" not in r.stderr, r.stderr
        after = json.loads(ckpt.read_text())["position"]["gtid_set"]
        if hole:
            assert after == before
        else:  # what came before the step back was handed out and checkpointed, in order
            rows = [json.loads(x)["after"]["@1"] for x in r.stdout.splitlines()]
            assert rows == [1, 2][:len(rows)], r.stdout
            assert (after == before) == (not rows), (before, after, rows)
