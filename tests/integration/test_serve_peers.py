"""binlake serve against programs nobody here wrote: mariadb-binlog --read-from-remote-server,
a real MariaDB replica (START SLAVE UNTIL master_gtid_pos) and python-mysql-replication.

The served binlog is a real MariaDB's (the session server's, default CRC32 checksums): one
closed file holding a table's creation and eight single-row transactions, copied aside.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import ChecksumAlg
from binlake.serve.primary import DumpStatus
from binlake.serve.store import BinlogStore
from test_serve_support import PASSWORD, USER, serving, wait_until

MARIADB_BINLOG = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
needs_mariadb_binlog = pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog is not installed")
ROWS = 8


@dataclass
class Served:
    file: Path
    """A closed CRC32 binlog of the session server, copied into its own directory."""
    start_gtid: str
    """The GTID position at the start of the file (before the CREATE TABLE)."""
    gtids: list[str]
    """The GTID of each insert, in order (row id i+1 is gtids[i])."""
    source: Any
    """The session server that wrote it (a real MariaDB primary serving the same file)."""


@pytest.fixture(scope="module")
def served(mariadb, tmp_path_factory: pytest.TempPathFactory) -> Served:
    if not hasattr(mariadb, "binlog_dir"):
        pytest.skip("needs the test MariaDB's binlog files on this machine")
    mariadb.sql("FLUSH BINARY LOGS", database=None)
    name, _, start = mariadb.binlog_end_gtid()
    mariadb.sql("DROP TABLE IF EXISTS peers_t",
                "CREATE TABLE peers_t (id INT PRIMARY KEY, v VARCHAR(20), u BIGINT UNSIGNED)")
    gtids = []
    for i in range(1, ROWS + 1):
        mariadb.sql(f"INSERT INTO peers_t VALUES ({i}, 'row {i}', 18446744073709551615 - {i})")
        gtids.append(_domain0(mariadb.binlog_end_gtid()[2]))
    mariadb.sql("FLUSH BINARY LOGS", database=None)
    out = tmp_path_factory.mktemp("served") / name
    shutil.copyfile(Path(mariadb.binlog_dir) / name, out)
    assert BinlogStore([out]).checksum == ChecksumAlg.CRC32  # the default, the case that failed
    return Served(out, start, gtids, mariadb)


def _domain0(state: str) -> str:
    """The domain-0 GTID of a GTID position (where the test's transactions go)."""
    return next(g for g in state.split(",") if g.startswith("0-"))


# -- mariadb-binlog --read-from-remote-server --------------------------------------------------


def _binlog(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    assert MARIADB_BINLOG is not None
    return subprocess.run([MARIADB_BINLOG, *args], capture_output=True, timeout=timeout)


def _remote(port: int, user: str, password: str) -> list[str]:
    return ["--read-from-remote-server", "--host=127.0.0.1", f"--port={port}", f"--user={user}",
            f"--password={password}"]


@needs_mariadb_binlog
def test_mariadb_binlog_remote_prints_what_a_local_read_prints(served: Served) -> None:
    """-vv through binlake serve == -vv of the file == -vv through the real MariaDB."""
    local = _binlog("-vv", str(served.file))
    assert local.returncode == 0, local.stderr
    with serving([served.file], flavor="mariadb") as srv:
        remote = _binlog(*_remote(srv.port, USER, PASSWORD), "-vv", served.file.name)
        said = list(srv.primary.statements)
    assert remote.returncode == 0, remote.stderr.decode()
    assert "SET @master_binlog_checksum='NONE'" in said
    assert remote.stdout == local.stdout
    src = served.source
    real = _binlog(*_remote(src.port, src.user, src.password), "-vv", served.file.name)
    assert real.returncode == 0, real.stderr.decode()
    assert real.stdout == local.stdout
    assert b"peers_t" in local.stdout and local.stdout.count(b"### INSERT INTO") == ROWS


@needs_mariadb_binlog
def test_mariadb_binlog_remote_from_mid_file_prints_what_the_real_primary_makes_it_print(
        served: Served) -> None:
    """From a position past the start both primaries send the FDE with log_pos and `created` 0
    (the replica must not take it as a position nor drop its temporary tables), so this
    output differs from a local read's, and must equal the real MariaDB's."""
    mid = _event_end_before(served.file, served.file.stat().st_size // 2)
    src = served.source
    real = _binlog(*_remote(src.port, src.user, src.password), "-vv", f"--start-position={mid}",
                   served.file.name)
    assert real.returncode == 0, real.stderr.decode()
    with serving([served.file], flavor="mariadb") as srv:
        ours = _binlog(*_remote(srv.port, USER, PASSWORD), "-vv", f"--start-position={mid}", served.file.name)
    assert ours.returncode == 0, ours.stderr.decode()
    assert ours.stdout == real.stdout
    assert f"# at {mid}".encode() in ours.stdout


@needs_mariadb_binlog
def test_mariadb_binlog_raw_copies_equal_the_served_file(served: Served, tmp_path: Path) -> None:
    with serving([served.file], flavor="mariadb") as srv:
        r = _binlog(*_remote(srv.port, USER, PASSWORD), "--raw", f"--result-file={tmp_path}/",
                    served.file.name)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / served.file.name).read_bytes() == served.file.read_bytes()


@needs_mariadb_binlog
def test_mariadb_binlog_stop_never_follows_a_growing_file(served: Served, tmp_path: Path) -> None:
    """--stop-never waits at the end and prints what the file gains; it ends (exit 1, lost
    connection) when the primary stops. Against the local read it differs only where a real
    primary's stream differs too: the artificial ROTATE the dump starts with is printed (as
    --stop-never prints every ROTATE, a marker between files), without CRC32 because the
    client set @master_binlog_checksum='NONE'; and the closing lines a clean end of file
    prints are missing, as the stream ended with an error. The file is marked in use, as a
    file being written is; a local read would warn about it, the primary clears the flag."""
    data = bytearray(served.file.read_bytes())
    data[4 + 17] |= 0x01  # LOG_EVENT_BINLOG_IN_USE_F in the FDE, as in a file being written
    live = tmp_path / "live" / served.file.name
    live.parent.mkdir()
    cut = _event_end_before(served.file, len(data) // 2)
    live.write_bytes(data[:cut])
    local = _binlog("-vv", str(served.file)).stdout.decode().splitlines()
    with serving([live.parent], flavor="mariadb") as srv:
        proc = subprocess.Popen([MARIADB_BINLOG, *_remote(srv.port, USER, PASSWORD), "-vv", "--stop-never",  # type: ignore[list-item]
                                 served.file.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert wait_until(lambda: _dump_at(srv, live.name, cut), timeout=10)
            with live.open("ab") as fh:
                fh.write(data[cut:])
            assert wait_until(lambda: _dump_at(srv, live.name, len(data)), timeout=10)
            time.sleep(0.3)  # let the client take in what it was sent before the primary goes
            assert proc.poll() is None  # still waiting for more
        finally:
            srv.stop()
            out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and b"Lost connection" in err, err
    got = out.decode().splitlines()
    header = local.index("DELIMITER /*!*/;") + 1
    fake = ["# at 4", f"#700101  0:00:00 server id 1  end_log_pos 0 \tRotate to {served.file.name}  pos: 4"]
    footer = local.index("DELIMITER ;")
    assert got == local[:header] + fake + local[header:footer]


def _event_end_before(path: Path, offset: int) -> int:
    from binlake.binlog.files import read_events

    return max(ev.end for ev in read_events(path) if ev.inner_index is None and ev.end <= offset)


def _dump_at(srv: Any, file: str, pos: int) -> bool:
    """Whether a dump has sent everything up to (file, pos) and waits for more."""
    return any(d.file is not None and d.file.name == file and d.position == pos
               and d.status is DumpStatus.WAITING for d in srv.dumps())


# -- a real MariaDB replica: START SLAVE UNTIL master_gtid_pos ---------------------------------


@pytest.fixture(scope="module")
def replica(mariadb_factory) -> Any:
    rep = mariadb_factory(server_id=2)
    # its own GTIDs must not make the primary's look out of order
    rep.sql("SET GLOBAL gtid_strict_mode=OFF", database=None)
    return rep


def _slave_status(rep: Any) -> dict[str, Any]:
    import pymysql

    conn = rep.connect(database=None, cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            return dict(cur.fetchone() or {})
    finally:
        conn.close()


def _until(rep: Any, gtid: str) -> dict[str, Any]:
    """START SLAVE UNTIL master_gtid_pos=gtid and wait for both threads to stop by themselves."""
    rep.sql(f"START SLAVE UNTIL master_gtid_pos='{gtid}'", database=None)
    stopped = wait_until(lambda: _slave_status(rep).get("Slave_SQL_Running") == "No"
                         and _slave_status(rep).get("Slave_IO_Running") == "No", timeout=30)
    status = _slave_status(rep)
    assert stopped, f"the replica did not stop at {gtid}: {status}"
    assert status["Last_IO_Error"] == "" and status["Last_SQL_Error"] == "", status
    return status


def test_real_replica_stops_at_start_slave_until_master_gtid_pos(served: Served, replica: Any,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A real primary honours @slave_until_gtid (a GTID_LIST flagged UNTIL_REACHED, then EOF);
    so must binlake's: the replica stops at that GTID, then at the next, then follows on."""
    caplog.set_level(logging.INFO, logger="binlake.serve")
    g = served.gtids
    with serving([served.file], flavor="mariadb") as srv:
        replica.sql("STOP SLAVE", "RESET SLAVE ALL", database=None)
        replica.sql(f"SET GLOBAL gtid_slave_pos='{served.start_gtid}'",
                    f"CHANGE MASTER TO master_host='127.0.0.1', master_port={srv.port}, master_user='{USER}', "
                    f"master_password='{PASSWORD}', master_use_gtid=slave_pos, master_connect_retry=1",
                    database=None)
        status = _until(replica, g[3])
        assert replica.sql("SELECT id FROM peers_t ORDER BY id") == [(i,) for i in range(1, 5)]
        assert _domain0(status["Gtid_IO_Pos"]) == g[3]
        _until(replica, g[6])
        assert replica.sql("SELECT id FROM peers_t ORDER BY id") == [(i,) for i in range(1, 8)]
        replica.sql("START SLAVE", database=None)
        assert wait_until(lambda: replica.sql("SELECT COUNT(*) FROM peers_t") == [(ROWS,)], timeout=30)
        replica.sql("STOP SLAVE", database=None)
        want = served.source.sql("SELECT id, v, u FROM peers_t ORDER BY id")
        assert replica.sql("SELECT id, v, u FROM peers_t ORDER BY id") == want
    logged = caplog.text
    assert f"until_gtid={g[3]}" in logged and f"until_gtid={g[6]}" in logged
    assert logged.count("until_reached=yes") == 2


# -- python-mysql-replication ---------------------------------------------------------------------


def test_python_mysql_replication_mariadb_without_position_reads_the_first_file(served: Served) -> None:
    """is_mariadb=True and no auto_position: pmr sends NUL bytes for the file name, which a
    real MariaDB reads as "" (its first binlog)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    with serving([served.file], flavor="mariadb") as srv:
        stream = BinLogStreamReader(
            connection_settings={"host": "127.0.0.1", "port": srv.port, "user": USER, "password": PASSWORD},
            server_id=4242, is_mariadb=True, blocking=False, only_events=[WriteRowsEvent],
            only_tables=["peers_t"])
        try:
            rows = [row["values"] for ev in stream for row in ev.rows]
        finally:
            stream.close()
    assert [(r["id"], r["v"], r["u"]) for r in rows] == [
        (i, f"row {i}", 18446744073709551615 - i) for i in range(1, ROWS + 1)]


# -- binlake serve -v --------------------------------------------------------------------------


@needs_mariadb_binlog
def test_serve_verbose_logs_accepted_connections_and_what_they_ask(served: Served) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "serve", str(served.file), "--port", "0",
                             "--password", PASSWORD, "-v"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ})
    try:
        assert proc.stdout is not None
        port = int(json.loads(proc.stdout.readline())["listening"].rsplit(":", 1)[1])
        ok = _binlog(*_remote(port, USER, PASSWORD), "-vv", served.file.name)
        bad = _binlog(*_remote(port, USER, "wrong"), served.file.name)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert ok.returncode == 0 and bad.returncode != 0
    lines = [line.split("binlake.serve: ", 1)[1] for line in err.splitlines() if "binlake.serve: " in line]
    assert lines[0].startswith(f"connection 1: accepted user={USER} peer=127.0.0.1:"), lines
    assert lines[0].endswith(" plugin=mysql_native_password tls=no"), lines
    assert lines[1] == (f"connection 1: binlog dump user={USER} server_id=0 file={served.file.name} pos=4 "
                        "blocking=no checksum=NONE"), lines
    assert lines[2].startswith("connection 1: closed events_sent="), lines
    assert f"at={served.file.name}:{served.file.stat().st_size}" in lines[2], lines
    assert lines[3].startswith(f"connection 2: refused user={USER} peer=127.0.0.1:"), lines
    assert "Traceback" not in err
