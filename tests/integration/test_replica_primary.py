"""The replica against a primary of its own (TLS on, semi-sync switched on, restarted,
binlogs purged): things a shared server must not go through."""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from binlake.cli.program import main
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL

SCHEMA = "binlake_test"


def _cert(subject: str, issuer_key, issuer_name: x509.Name | None, *, ca: bool):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _pem(path: Path, obj) -> str:
    if hasattr(obj, "private_bytes"):
        path.write_bytes(obj.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    else:
        path.write_bytes(obj.public_bytes(serialization.Encoding.PEM))
    return str(path)


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> dict[str, str]:
    """A self-signed CA, a server certificate it signed, and an unrelated CA."""
    d = tmp_path_factory.mktemp("replica-tls")
    ca_key, ca = _cert("binlake replica test CA", None, None, ca=True)
    key, cert = _cert("localhost", ca_key, ca.subject, ca=False)
    _, other = _cert("some other CA", None, None, ca=True)
    return {"ca": _pem(d / "ca.pem", ca), "cert": _pem(d / "server.pem", cert),
            "key": _pem(d / "server-key.pem", key), "other_ca": _pem(d / "other-ca.pem", other)}


@pytest.fixture(scope="module")
def own(mariadb_factory, tls):
    """A private primary with TLS on."""
    return mariadb_factory(extra_options={"ssl-ca": tls["ca"], "ssl-cert": tls["cert"], "ssl-key": tls["key"]})



def status(server, name: str) -> int:
    ((_, value),) = server.sql(f"SHOW GLOBAL STATUS LIKE '{name}'", database=None)
    return {"ON": 1, "OFF": 0}.get(value) if value in ("ON", "OFF") else int(value)


def stream_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["stream", *args])
    return res.exit_code, res.output


# -- TLS -------------------------------------------------------------------------------------------

def test_tls_verify_ca(own, tls, tmp_path: Path) -> None:
    own.sql("DROP TABLE IF EXISTS rp_tls", "CREATE TABLE rp_tls (id INT PRIMARY KEY, s VARCHAR(10))")
    f, p, _ = own.binlog_end_gtid()
    own.sql("INSERT INTO rp_tls VALUES (1, 'secret'), (2, 'data')")
    url = f"{own.url}/?ssl_mode=VERIFY_CA&ssl_ca={quote(tls['ca'])}"
    out = tmp_path / "out.jsonl"
    code, text = stream_cli(url, "--start", f"{f}:{p}", "--until-end", "--heartbeat", "0.5",
                            "--tables", f"{SCHEMA}.rp_tls", "--out", str(out))
    assert code == 0, text
    assert [json.loads(x)["after"] for x in out.read_text().splitlines()] == [
        {"id": 1, "s": "secret"}, {"id": 2, "s": "data"}]

    # The replication connection itself is encrypted (and verified).
    seen = {}
    bs = BinlogStream(ServerURL.parse(url), StreamOptions(start=Position(f, p), until_end=True, heartbeat=0.5))
    for _ in bs.changes():
        seen["tls"] = bs.conn is not None and bs.conn.tls
    assert seen == {"tls": True}

    # A CA that did not sign the server certificate: a clear error, nothing checkpointed.
    bad = f"{own.url}/?ssl_mode=VERIFY_CA&ssl_ca={quote(tls['other_ca'])}"
    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli(bad, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert "could not be verified" in text and "ssl_ca" in text, text
    assert not ckpt.exists()


# -- semi-sync -------------------------------------------------------------------------------------

@pytest.fixture
def semi_sync(own):
    """Call it to switch semi-sync on (after the test's DDL: a commit without any semi-sync
    replica would wait out the timeout and switch the primary to async); off afterwards."""
    def enable() -> None:
        own.sql("SET GLOBAL rpl_semi_sync_master_enabled = ON",
                "SET GLOBAL rpl_semi_sync_master_timeout = 5000", database=None)
        assert status(own, "Rpl_semi_sync_master_status") == 1

    try:
        yield enable
    finally:
        own.sql("SET GLOBAL rpl_semi_sync_master_enabled = OFF", database=None)


def _wait_for(pred, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_semi_sync_acks_every_transaction_after_the_checkpoint(own, semi_sync, tmp_path: Path) -> None:
    own.sql("DROP TABLE IF EXISTS rp_semi", "CREATE TABLE rp_semi (id INT PRIMARY KEY, v INT)")
    semi_sync()
    ckpt, out = tmp_path / "ckpt.json", tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "stream", own.url, "--semi-sync",
                             "--server-id", "7301", "--heartbeat", "0.5", "--tables", f"{SCHEMA}.rp_semi",
                             "--checkpoint", str(ckpt), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: status(own, "Rpl_semi_sync_master_clients") == 1 and ckpt.exists(), 15,
                  "the replica to connect as semi-sync")
        yes0, no0 = status(own, "Rpl_semi_sync_master_yes_tx"), status(own, "Rpl_semi_sync_master_no_tx")
        conn = own.connect()
        cur = conn.cursor()
        latencies = []
        for i in range(8):
            t0 = time.monotonic()
            cur.execute("BEGIN")
            cur.execute("INSERT INTO rp_semi VALUES (%s, %s)", (2 * i, i))
            cur.execute("INSERT INTO rp_semi VALUES (%s, %s)", (2 * i + 1, i))
            cur.execute("COMMIT")
            latencies.append(time.monotonic() - t0)
            cur.execute("SELECT @@last_gtid")
            (gtid,), = cur.fetchall()
            # COMMIT returned, so the ACK came; it was sent only after the checkpoint covered
            # this transaction and its rows were in the output file.
            saved = json.loads(ckpt.read_text())
            assert int(saved["position"]["gtid_state"].rsplit("-", 1)[1]) >= int(gtid.rsplit("-", 1)[1])
            lines = out.read_bytes()[: saved["extra"]["out_bytes"]].decode().splitlines()
            assert {"id": 2 * i + 1, "v": i} in [json.loads(x)["after"] for x in lines]
        conn.close()
        assert status(own, "Rpl_semi_sync_master_yes_tx") - yes0 == 8
        assert status(own, "Rpl_semi_sync_master_no_tx") == no0  # never fell back to async
        assert status(own, "Rpl_semi_sync_master_status") == 1
        assert max(latencies) < 2.5, latencies  # nowhere near the 5 s timeout
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()
    assert len(out.read_text().splitlines()) == 16


def test_semi_sync_ack_waits_for_on_commit(own, semi_sync) -> None:
    """The primary's COMMIT returns only after on_commit (the checkpoint) finished."""
    own.sql("DROP TABLE IF EXISTS rp_semi2", "CREATE TABLE rp_semi2 (id INT PRIMARY KEY)")
    semi_sync()
    started, stored = threading.Event(), []
    delay = 0.4

    def on_commit(pos: Position) -> None:
        time.sleep(delay)  # a slow disk
        stored.append(pos)

    bs = BinlogStream(ServerURL.parse(own.url), StreamOptions(
        server_id=7302, semi_sync=True, heartbeat=0.5, tables=lambda s, t: t == "rp_semi2",
        on_commit=on_commit, on_stream_start=lambda p: started.set()))
    result = {}

    def write() -> None:
        assert started.wait(10)
        _wait_for(lambda: status(own, "Rpl_semi_sync_master_clients") == 1, 10, "semi-sync client")
        no0 = status(own, "Rpl_semi_sync_master_no_tx")
        n0 = len(stored)
        t0 = time.monotonic()
        own.sql("INSERT INTO rp_semi2 VALUES (1)")
        result["latency"] = time.monotonic() - t0
        result["stored_when_committed"] = len(stored) - n0
        result["no_tx"] = status(own, "Rpl_semi_sync_master_no_tx") - no0
        bs.request_stop()  # takes effect at the next heartbeat

    t = threading.Thread(target=write)
    t.start()
    timer = threading.Timer(20, bs.request_stop)
    timer.start()
    got = [rec.after for rec in bs.changes()]
    t.join()
    timer.cancel()
    bs.close()
    assert got == [{"id": 1}]
    assert result["stored_when_committed"] >= 1, result
    assert delay <= result["latency"] < 2.5 and result["no_tx"] == 0, result


# -- restart ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["gtid", "file"])
def test_primary_restart_while_streaming(own, mode: str) -> None:
    table = f"rp_restart_{mode}"
    own.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    f, p, g = own.binlog_end_gtid()
    start = Position(gtid_state=g) if mode == "gtid" else Position(f, p)
    started = threading.Event()
    bs = BinlogStream(ServerURL.parse(own.url), StreamOptions(
        start=start, heartbeat=0.5, max_reconnect_wait=1.0, tables=lambda s, t: t == table,
        on_stream_start=lambda _: started.set()))
    done = {}

    def write() -> None:
        assert started.wait(10)
        conn = own.connect()
        cur = conn.cursor()
        for i in range(1, 6):
            cur.execute(f"INSERT INTO {table} VALUES ({i})")
        conn.close()
        time.sleep(0.3)
        own.restart()
        conn = own.connect()
        cur = conn.cursor()
        cur.execute("BEGIN")
        cur.executemany(f"INSERT INTO {table} VALUES (%s)", [(i,) for i in range(6, 11)])
        cur.execute("COMMIT")
        conn.close()
        done["ok"] = True

    t = threading.Thread(target=write)
    t.start()
    timer = threading.Timer(30, bs.request_stop)
    timer.start()
    ids = []
    for rec in bs.changes():
        ids.append(rec.after["id"])
        if len(ids) == 10:
            break
    t.join()
    timer.cancel()
    bs.close()
    assert done.get("ok")
    assert ids == list(range(1, 11))
    assert bs.reconnects >= 1
    assert bs.position.mode == ("mariadb-gtid" if mode == "gtid" else "file")


# -- purged binlogs ------------------------------------------------------------------------------------

def test_purged_binlog_and_purged_gtid_are_clear_errors(own, tmp_path: Path) -> None:
    own.sql("DROP TABLE IF EXISTS rp_purge", "CREATE TABLE rp_purge (id INT PRIMARY KEY)")
    own.sql("FLUSH BINARY LOGS", database=None)
    old_file, old_pos, old_gtid = own.binlog_end_gtid()
    own.sql("INSERT INTO rp_purge VALUES (1)", "INSERT INTO rp_purge VALUES (2)")
    own.sql("FLUSH BINARY LOGS", database=None)
    own.sql("INSERT INTO rp_purge VALUES (3)")
    keep = own.binlog_end_gtid()[0]

    def purged() -> bool:
        # The primary keeps a binlog that a dump thread still reads (an earlier test's, until
        # its next heartbeat) or that crash recovery still needs (until the binlog checkpoint).
        own.sql(f"PURGE BINARY LOGS TO '{keep}'", database=None)
        return own.sql("SHOW BINARY LOGS", database=None)[0][0] == keep

    _wait_for(purged, 15, f"the binlogs before {keep} to be purged")

    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli(own.url, "--start", f"{old_file}:{old_pos}", "--until-end",
                            "--checkpoint", str(ckpt))
    assert code != 0
    assert f"cannot stream from {old_file}:{old_pos}" in text and keep in text, text
    assert "start from a position it still has" in text and "left unchanged" in text
    assert not ckpt.exists()

    code, text = stream_cli(own.url, "--gtid", old_gtid, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert f"cannot stream from GTID position {old_gtid}" in text and "purged" in text, text
    assert not ckpt.exists()

    # A checkpoint that points into the purged file stays exactly as it was.
    ckpt.write_text(json.dumps({"version": 1, "position": {"file": old_file, "pos": old_pos},
                                "extra": {}}))
    before = (ckpt.read_bytes(), ckpt.stat().st_mtime_ns)
    time.sleep(0.01)
    code, text = stream_cli(own.url, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0 and old_file in text
    assert (ckpt.read_bytes(), ckpt.stat().st_mtime_ns) == before
