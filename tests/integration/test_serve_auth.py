"""Logging in to binlake's primary the MySQL 8 ways: caching_sha2_password full auth over TLS and
over plain TCP with RSA (key fetched, or from server_public_key_path), the fast path from the
cache on the next connection, mysql_native_password, refusals; and `binlake serve` itself."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.errors import ServerError
from binlake.protocol.auth import CACHING_SHA2_PASSWORD, NATIVE_PASSWORD, AuthError
from binlake.replica.connection import MySQLConnection
from test_serve_support import (
    MYSQL_SETS, PASSWORD, USER, decode_lines, link_files, make_cert, run_cli, serving, stream_lines,
)

CHAIN = "8.0.45-gtid-chain"


@pytest.fixture
def chain(corpus_dir: Path, tmp_path: Path) -> list[Path]:
    return link_files(corpus_dir, tmp_path, MYSQL_SETS[CHAIN])


def test_sha2_full_auth_over_tls_then_fast_auth(chain: list[Path], tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    expected = decode_lines(chain)
    with serving(chain, tls_cert=cert, tls_key=key) as srv:
        # full auth: the password goes in clear inside TLS; the certificate is verified
        url = srv.url(USER, PASSWORD, ssl_mode="VERIFY_IDENTITY", ssl_ca=str(cert))
        assert stream_lines(url, "--start", "binlog.000001:4") == expected
        assert USER in srv.sha2_cache
        with MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="VERIFY_CA",
                                     ssl_ca=cert) as c:
            assert c.tls and c.tls_version and c.auth_plugin == CACHING_SHA2_PASSWORD
            assert c.query("SELECT @@version").rows == [("8.4.3-binlake",)]
        # fast auth from the cache: works even without TLS and without any RSA key
        with MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="DISABLED") as c:
            assert not c.tls and c.ping() is not None


def test_sha2_full_auth_over_rsa_with_the_key_fetched(chain: list[Path]) -> None:
    expected = decode_lines(chain)
    with serving(chain) as srv:
        # no TLS, no key: the client refuses to send the password (and says what to do)
        r = run_cli("stream", srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--until-end")
        assert r.returncode != 0 and "allow_public_key_retrieval" in r.stderr
        assert USER not in srv.sha2_cache
        url = srv.url(USER, PASSWORD, ssl_mode="DISABLED", allow_public_key_retrieval="true")
        assert stream_lines(url, "--start", "binlog.000001:4") == expected
        assert USER in srv.sha2_cache
        # second connection: fast path, no key needed
        assert stream_lines(srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--start", "binlog.000001:4") == expected


def test_sha2_full_auth_over_rsa_with_server_public_key_path(chain: list[Path], tmp_path: Path) -> None:
    with serving(chain) as srv:
        pem = tmp_path / "public.pem"
        pem.write_bytes(srv.public_key_pem)
        url = srv.url(USER, PASSWORD, ssl_mode="DISABLED", server_public_key_path=str(pem))
        assert stream_lines(url, "--start", "binlog.000001:4") == decode_lines(chain)
        assert USER in srv.sha2_cache
        other = tmp_path / "other.pem"
        from binlake.protocol.auth import generate_rsa_key, public_key_pem

        other.write_bytes(public_key_pem(generate_rsa_key()))
        srv.sha2_cache.forget(USER)
        with pytest.raises(ServerError) as info:  # encrypted for another key: refused, not crashed
            MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="DISABLED",
                                    server_public_key_path=other)
        assert info.value.code == 1045


def test_native_password_and_wrong_passwords(chain: list[Path]) -> None:
    with serving(chain, plugin=NATIVE_PASSWORD) as srv:
        assert stream_lines(srv.url(USER, PASSWORD, ssl_mode="DISABLED"), "--start", "binlog.000001:4") == \
            decode_lines(chain)
        r = run_cli("stream", srv.url(USER, "wrong", ssl_mode="DISABLED"), "--until-end")
        assert r.returncode != 0 and "1045" in r.stderr and f"Access denied for user '{USER}'" in r.stderr
        assert r.stdout == ""
    with serving(chain) as srv:  # caching_sha2: the wrong password is caught after RSA full auth
        r = run_cli("stream", srv.url(USER, "wrong", ssl_mode="DISABLED", allow_public_key_retrieval="true"),
                    "--until-end")
        assert r.returncode != 0 and "Access denied" in r.stderr
        r = run_cli("stream", srv.url("nobody", PASSWORD, ssl_mode="DISABLED", allow_public_key_retrieval="true"),
                    "--until-end")
        assert r.returncode != 0 and "Access denied for user 'nobody'" in r.stderr
        assert USER not in srv.sha2_cache


def test_require_tls(chain: list[Path], tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    with serving(chain, tls_cert=cert, tls_key=key, require_tls=True) as srv:
        with pytest.raises(ServerError) as info:
            MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="DISABLED")
        assert info.value.code == 3159
        with MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="REQUIRED") as c:
            assert c.tls


def test_binlake_serve_command(chain: list[Path], tmp_path: Path) -> None:
    """`binlake serve` as a process: it prints where it listens, serves, stops on SIGTERM."""
    cert, key = make_cert(tmp_path)
    rsa = tmp_path / "rsa.pem"
    proc = subprocess.Popen(
        [sys.executable, "-m", "binlake.serve.cli", *map(str, chain), "--port", "0", "--password", PASSWORD,
         "--user", USER, "--tls-cert", str(cert), "--tls-key", str(key), "--rsa-key", str(rsa),
         "--server-version", "8.4.3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["flavor"] == "mysql" and hello["end"] == "binlog.000002:847" and hello["tls"]
        host, port = hello["listening"].split(":")
        assert host == "127.0.0.1" and rsa.exists()  # the key file was created
        url = f"mysql://{USER}:{PASSWORD}@127.0.0.1:{port}/?ssl_mode=VERIFY_CA&ssl_ca={cert}"
        assert stream_lines(url, "--start", "binlog.000001:4") == decode_lines(chain)
        url = f"mysql://{USER}:{PASSWORD}@127.0.0.1:{port}/?ssl_mode=DISABLED&server_public_key_path={tmp_path / 'pub.pem'}"
        from binlake.protocol.auth import public_key_pem
        from binlake.serve.server import load_rsa_key

        (tmp_path / "pub.pem").write_bytes(public_key_pem(load_rsa_key(rsa)))
        assert stream_lines(url, "--gtid", "396e294c-1ca4-11f1-9ae7-00155da79c6b:1-5")
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    r = subprocess.run([sys.executable, "-m", "binlake.serve.cli", str(chain[0]), "--port", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--password" in r.stderr


def test_auth_errors_are_clear_in_process(chain: list[Path]) -> None:
    with serving(chain) as srv:
        with pytest.raises(AuthError, match="not encrypted"):
            MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="DISABLED")
        with pytest.raises(Exception, match="does not offer TLS"):
            MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="REQUIRED")
