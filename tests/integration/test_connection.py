"""MySQLConnection against a real MariaDB: auth, queries, errors, TLS, raw packet reads."""
from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import struct
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from binlake.errors import ConfigError, ServerError
from binlake.protocol.capabilities import Command
from binlake.protocol.packets import MAX_PAYLOAD
from binlake.protocol.server import BinlogDump
from binlake.replica.connection import (
    ConnectionFailed,
    ConnectionLost,
    MySQLConnection,
    ReadTimeout,
    connect,
)


def open_conn(server, **opts) -> MySQLConnection:
    opts.setdefault("ssl_mode", "DISABLED")
    return MySQLConnection.connect("127.0.0.1", server.port, server.user, server.password, **opts)


@pytest.fixture
def conn(mariadb):
    c = open_conn(mariadb, database="binlake_test")
    yield c
    c.close()


def test_connect_native_password(conn: MySQLConnection) -> None:
    assert conn.flavor == "mariadb"
    assert conn.auth_plugin == "mysql_native_password"
    (version,), = conn.query("SELECT VERSION()").rows
    assert version == conn.server_version
    assert "MariaDB" in version and not version.startswith("5.5.5-")
    (cid,), = conn.query("SELECT CONNECTION_ID()").rows
    assert int(cid) == conn.connection_id
    assert conn.ping().status_flags & 0x0002  # autocommit


def test_show_master_status(conn: MySQLConnection) -> None:
    rs = conn.query("SHOW MASTER STATUS")
    assert rs.column_names[:2] == ["File", "Position"]
    (row,) = rs.rows
    assert row[0].startswith("mariadb-bin.") and int(row[1]) >= 4


def test_nulls_and_utf8mb4(conn: MySQLConnection) -> None:
    rs = conn.query("SELECT NULL, '', 'héllo', '🎉 emoji', NULL AS n2, 42, 1.5")
    assert rs.rows == [(None, "", "héllo", "🎉 emoji", None, "42", "1.5")]
    assert rs.column_names[4] == "n2"
    conn.execute("DROP TABLE IF EXISTS conn_utf8")
    conn.execute("CREATE TABLE conn_utf8 (id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, b VARBINARY(8))")
    ok = conn.execute("INSERT INTO conn_utf8 VALUES (1, '𝄞 clef', 0x00FF), (2, NULL, NULL)")
    assert ok.affected_rows == 2
    rows = conn.query("SELECT id, s, b FROM conn_utf8 ORDER BY id").rows
    assert rows[0][:2] == ("1", "𝄞 clef")
    assert rows[0][2].encode("utf-8", "surrogateescape") == b"\x00\xff"
    assert rows[1] == ("2", None, None)


def test_results_match_pymysql(mariadb, conn: MySQLConnection) -> None:
    sql = "SELECT seq, seq * 2, CONCAT('v', seq), IF(seq % 3 = 0, NULL, 'x') FROM seq_1_to_300"
    ours = conn.query(sql).rows
    theirs = mariadb.sql(sql)
    assert ours == [tuple(None if v is None else str(v) for v in r) for r in theirs]


def test_large_result(conn: MySQLConnection) -> None:
    rs = conn.query("SELECT seq, REPEAT('x', 200) FROM seq_1_to_100000")
    assert len(rs.rows) == 100_000
    assert rs.rows[-1] == ("100000", "x" * 200)


def test_values_and_statements_over_16_mib(conn: MySQLConnection) -> None:
    # a row larger than one packet: the server splits it, read_packet reassembles
    size = MAX_PAYLOAD + 1001  # even
    (value,), = conn.query(f"SELECT REPEAT('ab', {size // 2})").rows
    assert len(value) == size and value[:4] == "abab"
    # a statement larger than one packet: we split it
    literal = "z" * (MAX_PAYLOAD + 10)
    (length,), = conn.query(f"SELECT LENGTH('{literal}')").rows
    assert int(length) == len(literal)


def test_server_error_mapping_and_recovery(conn: MySQLConnection) -> None:
    with pytest.raises(ServerError) as info:
        conn.query("SELECT * FROM no_such_table")
    assert info.value.code == 1146
    assert info.value.sql_state == "42S02"
    assert "no_such_table" in info.value.server_message
    with pytest.raises(ServerError) as info:
        conn.execute("THIS IS NOT SQL")
    assert info.value.code == 1064
    assert conn.query("SELECT 1").rows == [("1",)]  # still usable


def test_wrong_password(mariadb) -> None:
    with pytest.raises(ServerError) as info:
        MySQLConnection.connect("127.0.0.1", mariadb.port, mariadb.user, "not-the-password", ssl_mode="DISABLED")
    err = info.value
    assert err.code == 1045
    assert "credentials" in err.hint
    assert "not-the-password" not in str(err)


def test_connection_refused_on_closed_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionFailed) as info:
        connect("127.0.0.1", port, "u", "pw", connect_timeout=5)
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "refused" in str(info.value) and info.value.hint


def test_unknown_host() -> None:
    with pytest.raises(ConnectionFailed, match="cannot resolve host"):
        connect("no-such-host.invalid", 3306, "u", "pw", connect_timeout=5)


def test_bad_ssl_mode() -> None:
    with pytest.raises(ConfigError):
        connect("127.0.0.1", 1, "u", "pw", ssl_mode="SOMETIMES")


def test_tls_required_but_not_offered(mariadb) -> None:
    with pytest.raises(ConnectionFailed, match="does not offer TLS"):
        open_conn(mariadb, ssl_mode="REQUIRED")
    # PREFERRED falls back to plain TCP
    with open_conn(mariadb, ssl_mode="PREFERRED") as c:
        assert not c.tls


def test_repr_and_close(mariadb) -> None:
    c = open_conn(mariadb)
    assert mariadb.password not in repr(c)
    assert "mariadb" in repr(c)
    c.close()
    c.close()
    assert c.closed
    with pytest.raises(ConnectionLost):
        c.query("SELECT 1")


def _start_dump(mariadb, *, non_block: bool) -> MySQLConnection:
    c = open_conn(mariadb)
    # MariaDB sends checksummed events only to replicas that say they can take them
    c.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
    c.execute("SET @mariadb_slave_capability = 4")
    (name, _pos, *_), = c.query("SHOW MASTER STATUS").rows
    dump = BinlogDump(position=4, server_id=4242, filename=name, flags=1 if non_block else 0)
    c.send_command(Command.BINLOG_DUMP, dump.build()[1:])
    return c


def test_read_packet_binlog_stream(mariadb) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS conn_dump (id INT)", "INSERT INTO conn_dump VALUES (1)")
    c = _start_dump(mariadb, non_block=True)
    try:
        types = []
        while True:
            pkt = c.read_packet()
            if pkt[0] == 0xFE and len(pkt) < 9:  # EOF: the non-blocking dump reached the end
                break
            assert pkt[0] == 0x00, bytes(pkt[:64])
            event_type = pkt[1 + 4]  # OK byte, then timestamp(4), type(1)
            (event_size,) = struct.unpack_from("<I", pkt, 1 + 9)
            assert event_size == len(pkt) - 1
            types.append(event_type)
        assert types[0] == 4  # ROTATE (artificial)
        assert 15 in types  # FORMAT_DESCRIPTION
        assert len(types) >= 3
        # the server ends the session after a non-blocking dump: reading on says so clearly
        with pytest.raises(ConnectionLost, match="closed the connection"):
            c.read_packet()
    finally:
        c.close()


def test_read_packet_copy_and_timeout(mariadb) -> None:
    c = _start_dump(mariadb, non_block=False)
    try:
        first = c.read_packet_copy()
        assert isinstance(first, bytes) and first[0] == 0x00
        c.read_timeout = 0.5
        with pytest.raises(ReadTimeout) as info:
            for _ in range(100_000):
                c.read_packet()
        assert f"127.0.0.1:{mariadb.port}" in str(info.value)
    finally:
        c.close()


# -- TLS -----------------------------------------------------------------------------------------


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _make_ca(cn: str):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn)).issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _make_server_cert(ca_key, ca_cert):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost")).issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _write(path: Path, key=None, cert=None) -> str:
    if key is not None:
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
    else:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(path)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("tls")
    ca_key, ca_cert = _make_ca("binlake test CA")
    srv_key, srv_cert = _make_server_cert(ca_key, ca_cert)
    _other_key, other_ca = _make_ca("some other CA")
    return {
        "ca": _write(d / "ca.pem", cert=ca_cert),
        "cert": _write(d / "server-cert.pem", cert=srv_cert),
        "key": _write(d / "server-key.pem", key=srv_key),
        "other_ca": _write(d / "other-ca.pem", cert=other_ca),
    }


@pytest.fixture(scope="module")
def tls_server(mariadb_factory, tls_files):
    server = mariadb_factory(extra_options={"ssl-ca": tls_files["ca"], "ssl-cert": tls_files["cert"],
                                            "ssl-key": tls_files["key"]})
    yield server
    server.stop()


def _cipher(c: MySQLConnection) -> str:
    (row,) = c.query("SHOW STATUS LIKE 'Ssl_cipher'").rows
    return row[1] or ""


@pytest.mark.parametrize("mode", ["VERIFY_CA", "REQUIRED", "VERIFY_IDENTITY", "PREFERRED"])
def test_tls_modes(tls_server, tls_files, mode: str) -> None:
    with open_conn(tls_server, ssl_mode=mode, ssl_ca=tls_files["ca"]) as c:
        assert c.tls and c.tls_version in ("TLSv1.2", "TLSv1.3")
        assert _cipher(c) != ""
        assert c.query("SELECT 'over tls'").rows == [("over tls",)]


def test_tls_disabled_is_plain(tls_server) -> None:
    with open_conn(tls_server, ssl_mode="DISABLED") as c:
        assert not c.tls and _cipher(c) == ""


def test_tls_verify_ca_with_wrong_ca(tls_server, tls_files) -> None:
    with pytest.raises(ConnectionFailed) as info:
        open_conn(tls_server, ssl_mode="VERIFY_CA", ssl_ca=tls_files["other_ca"])
    err = info.value
    assert f"127.0.0.1:{tls_server.port}" in str(err)
    assert "could not be verified" in str(err)
    assert "ssl_ca" in err.hint


def test_tls_wrong_password_still_1045(tls_server, tls_files) -> None:
    with pytest.raises(ServerError) as info:
        MySQLConnection.connect("127.0.0.1", tls_server.port, tls_server.user, "nope",
                                ssl_mode="VERIFY_CA", ssl_ca=tls_files["ca"])
    assert info.value.code == 1045
