"""Every bad input of issue 43 section 8 (and the privileges of section 4), fed to the
`binlake` program as a user runs it: a subprocess against the shared MariaDB, real corpus
files and files damaged here. Each one must end with a non-zero exit, exactly one line on
stderr that names the argument or position at fault, and no Python traceback.

`sync`'s checks run before Spark is imported: its cases end in about a second (Spark's
start-up alone takes tens of seconds)."""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import pytest

import binlake
from tcpproxy import TcpProxy  # tests/integration is on sys.path (rootdir-less test dirs)

DB = "bad_input"
PASSWORD = "bad-input-pw"
USERS = {
    # REPLICATION SLAVE only: reads the binlog, cannot ask where it ends
    "bi_slave": ["REPLICATION SLAVE ON *.*"],
    # a replica's rights but no SELECT anywhere
    "bi_noselect": ["REPLICATION SLAVE, BINLOG MONITOR ON *.*"],
    # sees the table (a privilege on it) but may not SELECT it
    "bi_insert": ["REPLICATION SLAVE, BINLOG MONITOR ON *.*", f"INSERT ON {DB}.t"],
    # the least-privilege grants the README documents
    "bi_least": ["REPLICATION SLAVE, BINLOG MONITOR ON *.*", f"SELECT ON {DB}.*"],
}
INCIDENT_FILE = "rust_mysql_common/bug40482-bin.000001"
XA_FILE = "generated-mariadb-10.11/mariadb-10.11.19-gtid-domains-xa.000001"


def binlake_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The `binlake` program (python -m binlake.cli) of this tree, as a subprocess."""
    env = dict(os.environ, PYTHONPATH=str(Path(binlake.__file__).resolve().parents[1]))
    env.pop("BINLAKE_PASSWORD", None)
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


@dataclass
class Ctx:
    url: str
    host_port: str
    corpus: Path
    tmp: Path

    def user_url(self, user: str) -> str:
        return f"mysql://{user}:{PASSWORD}@{self.host_port}"


@pytest.fixture(scope="module")
def ctx(mariadb, corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Ctx:
    statements = [f"CREATE DATABASE IF NOT EXISTS {DB}",
                  f"CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY, v INT)"]
    for user, grants in USERS.items():
        statements += [f"DROP USER IF EXISTS '{user}'@'%'",
                       f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}'"]
        statements += [f"GRANT {g} TO '{user}'@'%'" for g in grants]
    mariadb.sql(*statements, database=None)
    tmp = tmp_path_factory.mktemp("bad-input")
    (tmp / "garbage.json").write_bytes(b"\x00\x01 not json {")
    (tmp / "empty-list.json").write_text("[]")
    _xa_damaged(corpus_dir / XA_FILE, tmp / "xa-damaged.000001")
    parts = urlsplit(mariadb.url)
    return Ctx(mariadb.url, f"{parts.hostname}:{parts.port}", corpus_dir, tmp)


def _xa_damaged(src: Path, dst: Path) -> None:
    """The corpus XA file with its XA transaction's opening (the MariaDB GTID event's
    FL_PREPARED_XA flag) damaged, its CRC32 made to match: the XA_PREPARE closes nothing."""
    data = bytearray(src.read_bytes())
    at = 1325  # the MARIADB_GTID event of 0-1-172, flags 0x4c
    size = struct.unpack_from("<I", data, at + 9)[0]
    assert data[at + 4] == 162 and data[at + 19 + 12] & 0x40
    data[at + 19 + 12] &= ~0x40
    struct.pack_into("<I", data, at + size - 4, zlib.crc32(bytes(data[at:at + size - 4])))
    dst.write_bytes(bytes(data))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _corpus(c: Ctx, name: str) -> str:
    return str(c.corpus / name)


ANY_FILE = "generated-mariadb-10.11/mariadb-10.11.19-gtid-domains-xa.000001"

# (id, the arguments, words the one stderr line must hold)
CASES: list[tuple[str, Callable[[Ctx], list[str]], list[str]]] = [
    # -- decode ------------------------------------------------------------------------------
    ("decode-history-garbage", lambda c: ["decode", "--schema-history", str(c.tmp / "garbage.json"),
                                          _corpus(c, ANY_FILE)], ["garbage.json", "not JSON"]),
    ("decode-history-empty-list", lambda c: ["decode", "--schema-history",
                                             str(c.tmp / "empty-list.json"), _corpus(c, ANY_FILE)],
     ["empty-list.json", "not a binlake schema history"]),
    ("decode-tables-db", lambda c: ["decode", "--tables", "db", _corpus(c, ANY_FILE)],
     ["--tables", "'db'", "no dot", "'db.*'"]),
    ("decode-tables-bracket", lambda c: ["decode", "--tables", "[", _corpus(c, ANY_FILE)],
     ["--tables", "'['", "not closed"]),
    ("decode-tables-commas", lambda c: ["decode", "--tables", ",,", _corpus(c, ANY_FILE)],
     ["--tables", "',,'", "names no table"]),
    ("decode-tables-two-dots", lambda c: ["decode", "--tables", "a.b.c", _corpus(c, ANY_FILE)],
     ["--tables", "'a.b.c'", "2 dots"]),
    ("decode-start-negative", lambda c: ["decode", "--start-position", "-5", _corpus(c, ANY_FILE)],
     ["--start-position", "-5"]),
    ("decode-incident", lambda c: ["decode", _corpus(c, INCIDENT_FILE)],
     ["bug40482-bin.000001 offset 106 INCIDENT", "1590", "--skip-incidents"]),
    ("decode-incident-null", lambda c: ["decode", "--output", "null", _corpus(c, INCIDENT_FILE)],
     ["bug40482-bin.000001 offset 106 INCIDENT"]),
    ("decode-xa-damaged", lambda c: ["decode", str(c.tmp / "xa-damaged.000001")],
     ["xa-damaged.000001", "XA_PREPARE", "closes no XA transaction"]),
    # -- stream ------------------------------------------------------------------------------
    ("stream-url-ipv6", lambda c: ["stream", "mysql://root@[::1:3337", "--until-end"],
     ["mysql://root@[::1:3337", "malformed"]),
    ("stream-url-password-masked", lambda c: ["stream", "mysql://root:s3cret@[::1:3337"],
     ["mysql://root:***@[::1:3337"]),
    ("stream-out-under-file", lambda c: ["stream", c.url, "--until-end",
                                         "--out", "/etc/passwd/x.jsonl"],
     ["--out", "/etc/passwd/x.jsonl"]),
    *[(f"stream-tables-{name}", (lambda v: lambda c: ["stream", c.url, "--until-end",
                                                      "--tables", v])(value), ["--tables", repr(value)])
      for name, value in (("db", "db"), ("bracket", "["), ("commas", ",,"), ("two-dots", "a.b.c"))],
    ("stream-closed-port", lambda c: ["stream", f"mysql://u:p@127.0.0.1:{_closed_port()}",
                                      "--until-end"], ["127.0.0.1", "refused"]),
    # -- privileges (section 4) --------------------------------------------------------------
    ("stream-slave-only-default", lambda c: ["stream", c.user_url("bi_slave")],
     ["'bi_slave'@'%'", "BINLOG MONITOR", "GRANT BINLOG MONITOR ON *.* TO 'bi_slave'@'%'"]),
    ("stream-slave-only-until-end", lambda c: ["stream", c.user_url("bi_slave"), "--start",
                                               "mariadb-bin.000001:4", "--until-end"],
     ["BINLOG MONITOR", "--until-end", "GRANT BINLOG MONITOR"]),
    ("stream-slave-only-gtid", lambda c: ["stream", c.user_url("bi_slave"), "--gtid", "0-1-1",
                                          "--until-end"], ["BINLOG MONITOR", "GRANT"]),
    ("stream-no-select-checkpoint", lambda c: ["stream", c.user_url("bi_noselect"), "--until-end",
                                               "--checkpoint", str(c.tmp / "noselect.json")],
     ["SELECT", "schema history", "GRANT SELECT ON *.* TO 'bi_noselect'@'%'",
      "left unchanged"]),
    ("stream-no-select-tables", lambda c: ["stream", c.user_url("bi_noselect"), "--until-end",
                                           "--tables", f"{DB}.*"],
     [f"'{DB}.*'", "SELECT", f"GRANT SELECT ON `{DB}`.* TO 'bi_noselect'@'%'"]),
    ("stream-no-select-on-a-visible-table", lambda c: ["stream", c.user_url("bi_insert"),
                                                       "--until-end", "--tables", f"{DB}.*"],
     [f"lacks SELECT on {DB}.t", f"GRANT SELECT ON `{DB}`.* TO 'bi_insert'@'%'"]),
    # -- sync: checked before Spark ----------------------------------------------------------
    ("sync-no-such-table", lambda c: ["sync", c.url, "--tables", "nodb.*", "--once",
                                      "--warehouse", str(c.tmp / "wh")],
     ["--tables", "'nodb.*'", "matches no table"]),
    ("sync-bracket", lambda c: ["sync", c.url, "--tables", "[", "--once",
                                "--warehouse", str(c.tmp / "wh")], ["--tables", "'['"]),
    ("sync-closed-port", lambda c: ["sync", f"mysql://u:p@127.0.0.1:{_closed_port()}",
                                    "--tables", "a.*", "--warehouse", str(c.tmp / "wh")],
     ["127.0.0.1", "refused"]),
    ("sync-http", lambda c: ["sync", "http://127.0.0.1:80/", "--tables", "a.*",
                             "--warehouse", str(c.tmp / "wh")], ["'http'", "mysql://"]),
    ("sync-slave-only", lambda c: ["sync", c.user_url("bi_slave"), "--tables", f"{DB}.*",
                                   "--warehouse", str(c.tmp / "wh")], ["BINLOG MONITOR", "GRANT"]),
    ("sync-no-select", lambda c: ["sync", c.user_url("bi_noselect"), "--tables", f"{DB}.t",
                                  "--warehouse", str(c.tmp / "wh")],
     ["SELECT", "snapshot", f"GRANT SELECT ON `{DB}`.`t` TO 'bi_noselect'@'%'"]),
    # -- verify: checked before the source is read or Spark starts -------------------------
    ("verify-no-warehouse", lambda c: ["verify", c.url, "--tables", f"{DB}.*",
                                       "--warehouse", str(c.tmp / "no-such-wh")],
     ["--warehouse", "no-such-wh", "no such directory"]),
    ("verify-no-such-table", lambda c: ["verify", c.url, "--tables", "nodb.*",
                                        "--warehouse", str(c.tmp)],
     ["'nodb.*'", "no table matches"]),
    ("verify-closed-port", lambda c: ["verify", f"mysql://u:p@127.0.0.1:{_closed_port()}",
                                      "--tables", "a.*", "--warehouse", str(c.tmp)],
     ["127.0.0.1", "refused"]),
]


def assert_one_line_error(res: subprocess.CompletedProcess[str], words: list[str]) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode != 0, (res.returncode, res.stdout[-500:], res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("args, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gets_one_line(ctx: Ctx, args: Callable[[Ctx], list[str]],
                                 words: list[str]) -> None:
    argv = args(ctx)
    t0 = time.monotonic()
    res = binlake_cli(*argv)
    assert_one_line_error(res, words)
    if argv[0] in ("sync", "verify"):  # refused before Spark started (20 s and more)
        assert time.monotonic() - t0 < 15
    if "--checkpoint" in argv:
        assert not Path(argv[argv.index("--checkpoint") + 1]).exists()


def test_flipped_size_byte_on_a_stream_says_damaged_in_transit(mariadb, ctx: Ctx) -> None:
    """A byte of an event's size field flipped between the primary and binlake: the event
    is damaged, not cut short, so the hint is the CRC32 one (start again), not 'read again
    later'."""
    mariadb.sql(f"CREATE TABLE IF NOT EXISTS {DB}.sized (id INT PRIMARY KEY, s TEXT)",
                f"DELETE FROM {DB}.sized", database=None)
    file, pos = mariadb.binlog_end()
    mariadb.sql(f"INSERT INTO {DB}.sized VALUES (1, '{'S' * 3000}')", database=None)
    events = mariadb.sql(f"SHOW BINLOG EVENTS IN '{file}' FROM {pos}", database=None)
    write = next(e for e in events if str(e[2]).startswith("Write_rows"))
    at, server_id, end = int(write[1]), int(write[3]), int(write[4])
    size = end - at
    header = struct.pack("<BIII", 23, server_id, size, end)  # type, server id, size, log_pos
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    proxy.corrupt(header, struct.pack("<BIII", 23, server_id, size ^ 0x100, end))
    try:
        user, password = urlsplit(mariadb.url).username, urlsplit(mariadb.url).password
        res = binlake_cli("stream", f"mysql://{user}:{password}@127.0.0.1:{proxy.port}/"
                                    "?ssl_mode=DISABLED", "--start", f"{file}:{pos}",
                          "--until-end", "--tables", f"{DB}.sized")
    finally:
        proxy.close()
    line = assert_one_line_error(res, [f"{file} offset {at}", "damaged on the way",
                                       "start the stream again"])
    assert "read again later" not in line


def test_pattern_matching_no_table_is_a_warning_for_stream(ctx: Ctx) -> None:
    """A valid pattern that matches no table on the live server: the stream runs (the
    table may come), after one warning line naming the pattern."""
    res = binlake_cli("stream", ctx.url, "--until-end", "--tables", "nodb.*")
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "warning" in lines[0] and "'nodb.*'" in lines[0], res.stderr


def test_skip_incidents_reads_on_with_a_warning(ctx: Ctx) -> None:
    path = _corpus(ctx, INCIDENT_FILE)
    res = binlake_cli("decode", "--skip-incidents", path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        "binlake: warning: bug40482-bin.000001 offset 106: INCIDENT number 66 passed over "
        "(--skip-incidents): changes may be missing here"]
    events = binlake_cli("decode", "--events", path)  # printed as an event, no error
    assert events.returncode == 0 and '"type":"INCIDENT"' in events.stdout.replace(" ", "")


def test_least_privilege_grants_suffice(mariadb, ctx: Ctx) -> None:
    """REPLICATION SLAVE, BINLOG MONITOR and SELECT on the streamed database (README,
    'Least-privilege grants'): a stream from the end with a checkpoint bootstraps a schema
    history that holds the table, and reads its changes by name."""
    ckpt = ctx.tmp / "least.json"
    res = binlake_cli("stream", ctx.user_url("bi_least"), "--until-end", "--tables", f"{DB}.*",
                      "--checkpoint", str(ckpt))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    history = json.loads((ctx.tmp / "least.json.schema.json").read_text())
    assert [DB, "t"] in [[t["schema"], t["name"]] for t in history["tables"]]
    mariadb.sql(f"REPLACE INTO {DB}.t VALUES (7, 70)", database=None)
    res = binlake_cli("stream", ctx.user_url("bi_least"), "--until-end", "--tables", f"{DB}.*",
                      "--checkpoint", str(ckpt))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert any(r["after"] == {"id": 7, "v": 70} for r in rows if r.get("after")), res.stdout


def test_a_stream_stops_before_an_incident(corpus_dir: Path, tmp_path: Path) -> None:
    """binlake's primary serving the corpus file with an INCIDENT event: `stream` stops
    before it with the named error, its checkpoint before the event (a restart stops there
    again); --skip-incidents reads on with a warning."""
    from test_serve_support import link_files, plain_url, serving

    paths = link_files(corpus_dir, tmp_path, [("bug40482-bin.000001", INCIDENT_FILE)])
    ckpt = tmp_path / "ckpt.json"
    with serving(paths, version="8.4.3-binlake") as srv:
        url = plain_url(srv)
        args = ["stream", url, "--start", "bug40482-bin.000001:4", "--until-end",
                "--no-schema-history"]
        res = binlake_cli(*args, "--checkpoint", str(ckpt))
        assert_one_line_error(res, ["bug40482-bin.000001 offset 106 INCIDENT", "1590",
                                    "--skip-incidents"])
        saved = json.loads(ckpt.read_text())["position"]
        assert saved["file"] == "bug40482-bin.000001" and saved["pos"] <= 106, saved
        res = binlake_cli(*args, "--skip-incidents")
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [
            "binlake: warning: bug40482-bin.000001 offset 106: INCIDENT number 66 passed over "
            "(--skip-incidents): changes may be missing here"]
