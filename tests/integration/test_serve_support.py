"""Helpers for the tests against binlake's own primary (imported by the other test_serve_*
modules; tests/integration is on sys.path). They serve real MySQL/MariaDB binlogs of the shared
corpus, referenced in place (symlinks under tmp_path when a chain needs its original names)."""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from binlake.protocol.auth import CACHING_SHA2_PASSWORD, NATIVE_PASSWORD, Account
from binlake.serve.primary import Primary, ServeConfig
from binlake.serve.server import PrimaryServer
from binlake.serve.store import BinlogStore

PASSWORD = "serve-pw"
USER = "repl"

UUID80 = "396e294c-1ca4-11f1-9ae7-00155da79c6b"
UUID96 = "55778904-0299-11f1-b1b8-4ef0c4956feb"

#: corpus files served as (served name, corpus path); a chain keeps the names its ROTATEs use
MYSQL_SETS: dict[str, list[tuple[str, str]]] = {
    "8.0.31-zstd-payloads": [("mysql-bin.000057", "mysql-binlog-connector-rust/mysql-bin.000057")],
    "8.0.28-compressed": [("mysql-bin.compressed", "binlog-connector-java/mysql-bin.compressed")],
    "8.0.32-compressed": [("transaction_compression.000001", "rust_mysql_common/transaction_compression.000001")],
    "8.0.45-gtid-chain": [("binlog.000001", "percona-binlog-server/data_80045_gtid_binlog.000001"),
                          ("binlog.000002", "percona-binlog-server/data_80045_gtid_binlog.000002")],
    "8.4-percona": [(f"binlog.00000{i}", f"percona-operator/binlog.00000{i}") for i in (1, 2, 3)],
    "9.6-tagged-gtid": [("binlog.000004", "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001")],
    "9.5-7090-rows-events": [("binlog.000001", "docker-datadir-AirLin-K70/binlog.000001")],
}

#: one MariaDB 10.11 server's binlogs, in order (000004 is encrypted, 000006 is not in the corpus)
_M = "generated-mariadb-10.11/mariadb-10.11.19-"
MARIADB_CHAIN: list[tuple[str, str]] = [
    ("mariadb-bin.000001", _M + "row-full-metafull-crc32.000001"),
    ("mariadb-bin.000002", _M + "row-minimal-metaminimal-crc32.000001"),
    ("mariadb-bin.000003", _M + "row-noblob-metafull-crc32.000001"),
    ("mariadb-bin.000005", _M + "row-full-metafull-nochecksum.000001"),
    ("mariadb-bin.000007", _M + "row-compressed-crc32.000001"),
    ("mariadb-bin.000008", _M + "statement-mixed.000001"),
    ("mariadb-bin.000009", _M + "gtid-domains-xa.000001"),
    ("mariadb-bin.000010", _M + "large-event.000001"),
]


def link_files(corpus: Path, tmp: Path, files: Sequence[tuple[str, str]]) -> list[Path]:
    """Symlink corpus files under the names they are served as; returns them in order."""
    out = []
    for name, rel in files:
        link = tmp / name
        if not link.exists():
            link.symlink_to(corpus / rel)
        out.append(link)
    return out


@contextmanager
def serving(paths: Sequence[Path], *, flavor: str = "mysql", version: str | None = None,
            semi_sync: bool = False, plugin: str | None = None, **server_options: object
            ) -> Iterator[PrimaryServer]:
    """A PrimaryServer on 127.0.0.1 (free port) for the duration of the block; the account's
    plugin defaults to what the flavor defaults to (caching_sha2 on MySQL, native on MariaDB)."""
    plugin = plugin or (NATIVE_PASSWORD if flavor == "mariadb" else CACHING_SHA2_PASSWORD)
    primary = Primary(BinlogStore(list(paths)), ServeConfig(flavor=flavor, server_version=version,
                                                            semi_sync=semi_sync))
    srv = PrimaryServer(primary, {USER: Account(PASSWORD, plugin)}, **server_options)  # type: ignore[arg-type]
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def plain_url(srv: PrimaryServer, password: str = PASSWORD, **options: object) -> str:
    """No TLS; caching_sha2 full auth over RSA with the key fetched from the server."""
    opts: dict[str, object] = {"ssl_mode": "DISABLED", "allow_public_key_retrieval": "true"}
    opts.update(options)
    return srv.url(USER, password, **opts)


def run_cli(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`binlake ARGS` in a child process (real exit status, real stdout)."""
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def decode_lines(paths: Sequence[Path]) -> list[str]:
    r = run_cli("decode", *map(str, paths))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def stream_lines(url: str, *args: str) -> list[str]:
    r = run_cli("stream", url, "--until-end", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def is_row_change(line: str) -> bool:
    return json.loads(line)["op"] in ("insert", "update", "delete")


def assert_same_changes(streamed: list[str], decoded: list[str]) -> None:
    """The stream's JSON lines equal decode's, positions included; on a difference, say first
    whether the row changes already differ or only statement records (truncate/ddl/statement)."""
    if streamed == decoded:
        return
    rows = [line for line in decoded if is_row_change(line)]
    same_rows = [line for line in streamed if is_row_change(line)] == rows
    assert streamed == decoded, ("statement records differ (row changes are equal)" if same_rows
                                 else "row changes differ")


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def make_cert(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1/localhost (also its own CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    from binlake.protocol.auth import generate_rsa_key

    key = generate_rsa_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "binlake-serve-test")])
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
    cert_file, key_file = tmp / "server-cert.pem", tmp / "server-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_the_sets_exist(corpus_dir: Path) -> None:
    """Every corpus file these tests serve is where the sets say."""
    for files in [*MYSQL_SETS.values(), MARIADB_CHAIN]:
        for _, rel in files:
            assert (corpus_dir / rel).is_file(), rel
