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
        self.log = open(self.dir.parent / "dolt.log", "w")
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
