"""`binlake stream` against binlake's own primary serving real MySQL 8.0/8.4/9.x and MariaDB
binlogs: the same change records (positions included) as `binlake decode` on the same files;
GTID positioning yields exactly the transactions the replica lacks; python-mysql-replication, an
independent client, reads the same rows from the same primary."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlake.gtid.sets import MariaGtidState, MySQLGtidSet
from test_serve_support import (
    MARIADB_CHAIN, MYSQL_SETS, PASSWORD, USER, UUID80, UUID96, assert_same_changes, decode_lines,
    is_row_change, link_files, plain_url, run_cli, serving, stream_lines,
)


@pytest.mark.parametrize("name", list(MYSQL_SETS))
def test_stream_equals_decode_mysql(name: str, corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[name])
    decoded = decode_lines(paths)
    assert decoded, "the set has row changes"
    with serving(paths, version="8.4.3-binlake") as srv:
        streamed = stream_lines(plain_url(srv), "--start", f"{paths[0].name}:4")
        statements = list(srv.primary.statements)
    assert "SHOW BINARY LOG STATUS" in statements and "SHOW MASTER STATUS" not in statements
    assert_same_changes(streamed, decoded)


def test_stream_equals_decode_mariadb_chain(corpus_dir: Path, tmp_path: Path) -> None:
    """Eight MariaDB 10.11 files: CRC32 and no-checksum files mixed, compressed events, GTID
    domains, XA, a 16 MiB event that spans two protocol packets."""
    paths = link_files(corpus_dir, tmp_path, MARIADB_CHAIN)
    decoded = decode_lines(paths)
    with serving(paths, flavor="mariadb") as srv:
        streamed = stream_lines(srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--start", f"{paths[0].name}:4")
        assert "SHOW MASTER STATUS" in srv.primary.statements  # MariaDB's name for it
    assert_same_changes(streamed, decoded)


def _gtid_of(line: str) -> str | None:
    return json.loads(line)["gtid"]


@pytest.mark.parametrize("name, have", [
    ("8.0.45-gtid-chain", f"{UUID80}:1-3"),
    ("8.0.45-gtid-chain", f"{UUID80}:1-3:5"),
    ("8.0.45-gtid-chain", f"{UUID80}:2:4"),
    ("8.0.45-gtid-chain", f"{UUID80}:1-4"),
    ("8.0.45-gtid-chain", f"{UUID80}:1-6"),
    ("9.6-tagged-gtid", f"{UUID96}:1-13:mytag:1-2"),
    ("9.6-tagged-gtid", f"{UUID96}:1-13:mytag:1-3"),
    ("9.6-tagged-gtid", f"{UUID96}:1-13:mytag:1-2:7,11111111-2222-3333-4444-555555555555:1-5"),
])
def test_gtid_dump_yields_exactly_the_missing_transactions(name: str, have: str, corpus_dir: Path,
                                                           tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[name])
    got = MySQLGtidSet(have)
    expected = [line for line in decode_lines(paths) if not got.contains(_gtid_of(line))]
    with serving(paths) as srv:
        streamed = stream_lines(plain_url(srv), "--gtid", have)
    assert_same_changes(streamed, expected)
    assert {_gtid_of(line) for line in streamed}.isdisjoint(
        {g for g in (_gtid_of(line) for line in decode_lines(paths)) if got.contains(g)})


@pytest.mark.parametrize("name, have, message", [
    ("8.0.45-gtid-chain", f"{UUID80}:1-10", "has more GTIDs than the source has"),
    ("9.6-tagged-gtid", f"{UUID96}:1-13", "the missing transactions are '" + f"{UUID96}:mytag:1-2'"),
])
def test_gtid_dump_refusals(name: str, have: str, message: str, corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[name])
    with serving(paths) as srv:
        r = run_cli("stream", plain_url(srv), "--gtid", have, "--until-end")
    assert r.returncode != 0 and "1236" in r.stderr and message in r.stderr, r.stderr


@pytest.mark.parametrize("state", ["0-1-100", "0-1-172,1-1-1,2-7-1000", "0-1-179,1-1-1,2-7-1001"])
def test_mariadb_gtid_positioning(state: str, corpus_dir: Path, tmp_path: Path) -> None:
    """@slave_connect_state: the primary picks the file from the GTID_LIST events and skips
    what the replica has, per domain."""
    paths = link_files(corpus_dir, tmp_path, MARIADB_CHAIN)
    have = MariaGtidState(state)
    expected = [line for line in decode_lines(paths) if not have.contains(_gtid_of(line))]
    with serving(paths, flavor="mariadb") as srv:
        streamed = stream_lines(srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--gtid", state)
        assert any(s.startswith("SET @slave_connect_state") for s in srv.primary.statements)
    assert_same_changes(streamed, expected)


def test_mariadb_state_older_than_the_binlogs_is_refused(corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MARIADB_CHAIN[3:])  # starts at GTID_LIST 0-1-97
    with serving(paths, flavor="mariadb") as srv:
        r = run_cli("stream", srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--gtid", "0-1-50", "--until-end")
    assert r.returncode != 0 and "Could not find GTID state requested by slave" in r.stderr, r.stderr


# -- a second, independent client ----------------------------------------------------------------


def _pymysqlreplication_rows(port: int, **kwargs: object) -> int:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    settings = {"host": "127.0.0.1", "port": port, "user": USER, "password": PASSWORD, "connect_timeout": 10,
                "read_timeout": 30}
    reader = BinLogStreamReader(connection_settings=settings, server_id=4242, blocking=False,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent], **kwargs)
    try:
        return sum(len(ev.rows) for ev in reader)
    finally:
        reader.close()


# (python-mysql-replication 1.0.17 itself cannot read rows inside TRANSACTION_PAYLOAD, MariaDB
# compressed rows events, or MINIMAL-metadata string columns, so those files are not used here)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # its own use of PyMySQL's db=
@pytest.mark.parametrize("name", ["8.0.45-gtid-chain", "8.4-percona", "9.6-tagged-gtid", "9.5-7090-rows-events"])
def test_python_mysql_replication_reads_our_primary(name: str, corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[name])
    rows = sum(1 for line in decode_lines(paths) if is_row_change(line))
    with serving(paths) as srv:
        assert _pymysqlreplication_rows(srv.port, log_file=paths[0].name, log_pos=4, resume_stream=True) == rows
        assert "SHOW BINARY LOG STATUS" not in srv.primary.statements  # it was given the position
        assert len(srv.primary.replicas) == 0  # gone after it closed


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_python_mysql_replication_gtid_and_mariadb(corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS["8.0.45-gtid-chain"])
    lines = decode_lines(paths)
    have = f"{UUID80}:1-3"
    missing = sum(1 for line in lines if is_row_change(line) and not MySQLGtidSet(have).contains(_gtid_of(line)))
    assert 0 < missing < sum(1 for line in lines if is_row_change(line))
    with serving(paths) as srv:
        assert _pymysqlreplication_rows(srv.port, auto_position=have) == missing  # COM_BINLOG_DUMP_GTID
    mpaths = link_files(corpus_dir, tmp_path, MARIADB_CHAIN[5:7])  # three GTID domains
    mlines = decode_lines(mpaths)
    # (not 0-1-172: that is an XA PREPARE, whose row binlake hands out at the XA COMMIT 0-1-173,
    # while python-mysql-replication counts rows where they are logged)
    state = MariaGtidState("0-1-171,2-1-1000")
    missing = sum(1 for line in mlines if is_row_change(line) and not state.contains(_gtid_of(line)))
    assert 0 < missing < sum(1 for line in mlines if is_row_change(line))
    with serving(mpaths, flavor="mariadb") as srv:
        assert _pymysqlreplication_rows(srv.port, is_mariadb=True, auto_position=str(state)) == missing
