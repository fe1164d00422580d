"""MariaDB's ed25519 accounts (client_ed25519): binlake signs the server's nonce with the key
derived from the password; the real server must accept it, refuse a wrong password, store the
public key we derive, and stream the binlog to such an account."""
from __future__ import annotations

import base64

import pytest

from binlake.errors import ServerError
from binlake.protocol import ed25519
from binlake.replica.connection import MySQLConnection
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL

USER, PASSWORD = "ed_user", "ed-sécret 25519"


@pytest.fixture(scope="module")
def ed_account(mariadb):
    installed = mariadb.sql("SELECT PLUGIN_STATUS FROM information_schema.PLUGINS "
                            "WHERE PLUGIN_NAME = 'ed25519'", database=None)
    if not installed:
        mariadb.sql("INSTALL SONAME 'auth_ed25519'", database=None)
    mariadb.sql(f"DROP USER IF EXISTS '{USER}'@'%'",
                f"CREATE USER '{USER}'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{PASSWORD}')",
                f"GRANT SELECT, RELOAD, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{USER}'@'%'",
                database=None)
    yield mariadb
    mariadb.sql(f"DROP USER IF EXISTS '{USER}'@'%'", database=None)


def test_ed25519_account_connects(ed_account) -> None:
    conn = MySQLConnection.connect("127.0.0.1", ed_account.port, USER, PASSWORD, ssl_mode="DISABLED")
    try:
        assert conn.auth_plugin == "client_ed25519"
        assert conn.query("SELECT CURRENT_USER()").rows == [(f"{USER}@%",)]
    finally:
        conn.close()


def test_ed25519_wrong_password_is_refused(ed_account) -> None:
    with pytest.raises(ServerError) as info:
        MySQLConnection.connect("127.0.0.1", ed_account.port, USER, PASSWORD + "x",
                                ssl_mode="DISABLED")
    assert info.value.code == 1045
    assert PASSWORD not in str(info.value)


def test_the_server_stores_the_public_key_we_derive(ed_account) -> None:
    (stored,), = ed_account.sql(
        "SELECT JSON_VALUE(Priv, '$.authentication_string') FROM mysql.global_priv "
        f"WHERE User = '{USER}'", database=None)
    assert base64.b64decode(stored + "=") == ed25519.public_key(PASSWORD)


def test_an_ed25519_account_streams_the_binlog(ed_account) -> None:
    ed_account.sql("CREATE TABLE IF NOT EXISTS ed_rows (id INT PRIMARY KEY, s TEXT)",
                   "DELETE FROM ed_rows")
    file, pos = ed_account.binlog_end()
    ed_account.sql("INSERT INTO ed_rows VALUES (1, 'signed'), (2, 'in')")
    url = ServerURL("127.0.0.1", ed_account.port, USER, PASSWORD, {"ssl_mode": "DISABLED"})
    bs = BinlogStream(url, StreamOptions(start=Position(file, int(pos)), until_end=True))
    try:
        got = [(r.op, r.after) for r in bs.changes() if r.table == "ed_rows"]
    finally:
        bs.close()
    assert got == [("insert", {"id": 1, "s": "signed"}), ("insert", {"id": 2, "s": "in"})]
