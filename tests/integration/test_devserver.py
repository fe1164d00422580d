"""The dev server is the ground truth every integration test stands on: check it is configured
as promised, writes binlogs where we look for them, survives restarts and crashes, and fails
loudly with the server's own words."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake.devtools.devserver import DevServer, DevServerError


def _own(server: object) -> DevServer:
    if not isinstance(server, DevServer):
        pytest.skip("needs a server started by the tests, not BINLAKE_TEST_URL")
    return server


def _master_status(server: DevServer) -> tuple[str, int]:
    rows = server.sql("SHOW MASTER STATUS")
    assert rows, "SHOW MASTER STATUS is empty: the binlog is off"
    return str(rows[0][0]), int(rows[0][1])


def test_settings_are_as_configured(mariadb: DevServer) -> None:
    server = _own(mariadb)
    rows = server.sql(
        "SELECT @@log_bin, @@binlog_format, @@server_id, @@gtid_strict_mode, "
        "@@binlog_row_metadata, @@binlog_row_image, @@binlog_checksum, @@log_slave_updates, "
        "@@max_allowed_packet, @@bind_address"
    )
    assert rows == [(1, "ROW", 1, 1, "FULL", "FULL", "CRC32", 1, 1 << 30, "127.0.0.1")]
    assert server.url == f"mysql://binlake:binlake-pw@127.0.0.1:{server.port}"


def test_user_may_replicate(mariadb: DevServer) -> None:
    grants = " ".join(r[0] for r in mariadb.sql("SHOW GRANTS"))
    assert "ALL PRIVILEGES ON *.*" in grants and "WITH GRANT OPTION" in grants
    # the privileges a binlog client actually exercises
    assert mariadb.sql("SHOW BINARY LOGS")
    assert mariadb.sql("SELECT @@gtid_binlog_pos") is not None


def test_write_moves_binlog_position(mariadb: DevServer) -> None:
    server = _own(mariadb)
    server.sql("CREATE TABLE IF NOT EXISTS devserver_t (id INT PRIMARY KEY, v VARCHAR(20))")
    file_before, pos_before = _master_status(server)
    server.sql("INSERT INTO devserver_t VALUES (1, 'one') ON DUPLICATE KEY UPDATE v = 'again'")
    file_after, pos_after = _master_status(server)
    assert (file_after, pos_after) > (file_before, pos_before)

    logs = {str(name): int(size) for name, size, *_ in server.sql("SHOW BINARY LOGS")}
    assert logs[file_after] == pos_after
    binlog = server.binlog_dir / file_after
    assert binlog.is_file()
    assert binlog.read_bytes()[:4] == b"\xfebin"
    assert binlog.stat().st_size >= pos_after


def test_restart_keeps_data_and_port(mariadb_factory) -> None:
    server: DevServer = mariadb_factory(server_id=7)
    port = server.port
    server.sql("CREATE TABLE keep (id INT PRIMARY KEY)", "INSERT INTO keep VALUES (1), (2)")
    server.restart()
    assert server.port == port
    assert server.sql("SELECT id FROM keep ORDER BY id") == [(1,), (2,)]
    assert server.sql("SELECT @@server_id") == [(7,)]


def test_kill_then_start_recovers_committed_rows(mariadb_factory) -> None:
    server: DevServer = mariadb_factory()
    server.sql("CREATE TABLE crash (id INT PRIMARY KEY)", "INSERT INTO crash VALUES (1)")
    pid = server.pid
    server.kill()
    assert not server.running and pid is not None
    server.start()
    assert server.sql("SELECT id FROM crash") == [(1,)]
    # after a crash the server opens a fresh binlog file and keeps numbering
    assert len(server.sql("SHOW BINARY LOGS")) >= 2


def test_two_servers_with_different_metadata(mariadb_factory) -> None:
    minimal: DevServer = mariadb_factory(binlog_row_metadata="MINIMAL", binlog_row_image="MINIMAL", server_id=11)
    full: DevServer = mariadb_factory(binlog_row_metadata="FULL", server_id=12)
    assert minimal.port != full.port
    assert minimal.running and full.running
    assert minimal.sql("SELECT @@binlog_row_metadata, @@binlog_row_image, @@server_id") == [
        ("MINIMAL", "MINIMAL", 11)
    ]
    assert full.sql("SELECT @@binlog_row_metadata, @@binlog_row_image, @@server_id") == [("FULL", "FULL", 12)]
    minimal.sql("CREATE TABLE only_here (id INT)")
    assert full.sql("SHOW TABLES LIKE 'only_here'") == []


def test_extra_options_reach_the_server(mariadb_factory) -> None:
    server: DevServer = mariadb_factory(extra_options={"rpl_semi_sync_master_enabled": "ON"})
    assert server.sql("SELECT @@rpl_semi_sync_master_enabled") == [(1,)]


def test_bad_option_fails_with_error_log_tail(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "bad", extra_options={"no-such-option-binlake": "1"})
    with pytest.raises(DevServerError) as info:
        server.start(timeout=30)
    message = str(info.value)
    assert "no-such-option-binlake" in message  # mariadbd's own complaint, from error.log
    assert str(server.error_log) in message
    assert not server.running


def test_context_manager_stops(tmp_path: Path) -> None:
    with DevServer(tmp_path / "ctx") as server:
        assert server.sql("SELECT 1") == [(1,)]
        proc_pid = server.pid
    assert proc_pid is not None and not server.running


def test_second_instance_on_same_datadir_is_refused(mariadb_factory) -> None:
    first: DevServer = mariadb_factory()
    twin = DevServer(first.base_dir)
    with pytest.raises(DevServerError, match="already running"):
        twin.start()
    assert first.sql("SELECT 1") == [(1,)]
