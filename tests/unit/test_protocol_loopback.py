"""ServerConnection over real loopback sockets, against PyMySQL (an independent client) and
against binlake's own MySQLConnection, including caching_sha2 full auth over real TLS and RSA.

The test server loop here is deliberately tiny: it is the pattern an I/O edge follows
(flush what the protocol wants sent, read when it needs data, wrap in TLS when asked).
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

import pymysql
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from binlake.errors import ServerError
from binlake.protocol import NEED_DATA, auth
from binlake.protocol import server as S
from binlake.protocol.auth import Account, Sha2Cache
from binlake.replica.connection import MySQLConnection

PASSWORD = "loop-pw"


class LoopbackServer:
    """Accepts connections on 127.0.0.1 and serves each with a ServerConnection in a thread."""

    def __init__(self, plugin: str, default_plugin: str, *, rsa_key=None, tls: ssl.SSLContext | None = None) -> None:
        self.plugin = plugin
        self.default_plugin = default_plugin
        self.rsa_key = rsa_key
        self.tls = tls
        self.cache = Sha2Cache()
        self.events: list[object] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        s = S.ServerConnection({"u": Account(PASSWORD, self.plugin)}, default_plugin=self.default_plugin,
                               rsa_private_key=self.rsa_key, sha2_cache=self.cache,
                               tls_available=self.tls is not None, server_version="8.0.36-binlake-test")
        try:
            while True:
                ev = s.next_event()
                out = s.data_to_send()
                if out:
                    sock.sendall(out)
                if ev is NEED_DATA:
                    if s.state is S.ServerState.CLOSED:
                        return
                    data = sock.recv(s.recv_size())  # never read past an SSLRequest
                    if not data:
                        return
                    s.receive_data(data)
                    continue
                self.events.append(ev)
                if isinstance(ev, S.TLSRequested):
                    assert self.tls is not None
                    sock = self.tls.wrap_socket(sock, server_side=True)
                    s.tls_started()
                elif isinstance(ev, S.Query):
                    if ev.sql.upper().startswith("SELECT"):
                        s.send_result_set(["a", "b"], [(1, "x"), (None, "é")])
                    else:
                        s.send_ok()
                elif isinstance(ev, S.Ping):
                    s.send_ok()
                sock.sendall(s.data_to_send())
        except (OSError, ssl.SSLError):
            return
        finally:
            sock.close()

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(5)

    def outcomes(self) -> list[str]:
        return [type(e).__name__ for e in self.events if isinstance(e, (S.Authenticated, S.AuthenticationFailed))]


@pytest.fixture(scope="module")
def rsa_key():
    return auth.generate_rsa_key()


PLUGINS = [auth.NATIVE_PASSWORD, auth.CACHING_SHA2_PASSWORD]


@pytest.mark.parametrize("default", PLUGINS)
@pytest.mark.parametrize("plugin", PLUGINS)
def test_pymysql_against_our_server(plugin: str, default: str, rsa_key) -> None:
    srv = LoopbackServer(plugin, default, rsa_key=rsa_key)
    try:
        for _ in range(2):  # caching_sha2: first RSA full auth, then fast auth from the cache
            c = pymysql.connect(host="127.0.0.1", port=srv.port, user="u", password=PASSWORD,
                                connect_timeout=5, read_timeout=5)
            with c.cursor() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchall() == (("1", "x"), (None, "é"))
                assert [d[0] for d in cur.description] == ["a", "b"]
            c.ping()
            c.close()
        with pytest.raises(pymysql.err.OperationalError) as info:
            pymysql.connect(host="127.0.0.1", port=srv.port, user="u", password="bad",
                            connect_timeout=5, read_timeout=5)
        assert info.value.args[0] == 1045
    finally:
        srv.close()
    assert srv.outcomes() == ["Authenticated", "Authenticated", "AuthenticationFailed"]


def test_our_client_sha2_rsa_then_fast(rsa_key) -> None:
    srv = LoopbackServer(auth.CACHING_SHA2_PASSWORD, auth.CACHING_SHA2_PASSWORD, rsa_key=rsa_key)
    try:
        with pytest.raises(auth.AuthError, match="not encrypted"):
            MySQLConnection.connect("127.0.0.1", srv.port, "u", PASSWORD, ssl_mode="DISABLED")
        with MySQLConnection.connect("127.0.0.1", srv.port, "u", PASSWORD, ssl_mode="DISABLED",
                                     allow_public_key_retrieval=True) as c:
            assert c.flavor == "mysql" and c.server_version == "8.0.36-binlake-test"
            assert c.query("SELECT x").rows == [("1", "x"), (None, "é")]
        assert "u" in srv.cache
        with MySQLConnection.connect("127.0.0.1", srv.port, "u", PASSWORD, ssl_mode="DISABLED") as c:
            assert c.ping() is not None  # fast auth: no key needed now
        with pytest.raises(ServerError) as info:
            MySQLConnection.connect("127.0.0.1", srv.port, "u", "bad", ssl_mode="DISABLED")
        assert info.value.code == 1045 and "credentials" in info.value.hint
    finally:
        srv.close()


def test_our_client_sha2_with_public_key_file(rsa_key, tmp_path: Path) -> None:
    key_file = tmp_path / "public.pem"
    key_file.write_bytes(auth.public_key_pem(rsa_key))
    srv = LoopbackServer(auth.CACHING_SHA2_PASSWORD, auth.NATIVE_PASSWORD, rsa_key=rsa_key)
    try:
        with MySQLConnection.connect("127.0.0.1", srv.port, "u", PASSWORD, ssl_mode="DISABLED",
                                     server_public_key_path=key_file) as c:
            assert c.auth_plugin == auth.CACHING_SHA2_PASSWORD  # switched from native
    finally:
        srv.close()


def _tls_context(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    key = auth.generate_rsa_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file = tmp_path / "cert.pem"
    key_file = tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_file, key_file)
    return ctx, cert_file


def test_our_client_sha2_full_auth_over_real_tls(tmp_path: Path) -> None:
    ctx, ca_file = _tls_context(tmp_path)
    srv = LoopbackServer(auth.CACHING_SHA2_PASSWORD, auth.CACHING_SHA2_PASSWORD, tls=ctx)  # no RSA key
    try:
        with MySQLConnection.connect("127.0.0.1", srv.port, "u", PASSWORD, ssl_mode="VERIFY_IDENTITY",
                                     ssl_ca=ca_file) as c:
            assert c.tls
            assert c.query("SELECT 1").rows[0] == ("1", "x")
        assert "u" in srv.cache  # the cleartext password over TLS filled the fast-auth cache
        assert any(isinstance(e, S.TLSRequested) for e in srv.events)
    finally:
        srv.close()
