"""The replication dialogue against binlake's primary: MySQL 8.4 vs 8.0 statement names,
heartbeats while a blocking dump waits, tailing a binlog that grows, semi-sync ACKs at every
transaction end, and a replica that resumes exactly after the primary cuts its connection."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import ChecksumAlg
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import HeartbeatEvent, MariaGtidEvent, QueryEvent
from binlake.binlog.files import read_events
from binlake.replica import dialogue as dlg
from binlake.replica.connection import MySQLConnection
from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL
from test_serve_support import (
    MARIADB_CHAIN, MYSQL_SETS, PASSWORD, USER, assert_same_changes, decode_lines, is_row_change, link_files,
    plain_url, run_cli, serving, stream_lines, wait_until,
)

CHAIN = "8.0.45-gtid-chain"


@pytest.mark.parametrize("version, asked, never", [
    ("8.4.3-binlake", "SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"),
    ("9.1.0", "SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"),
    ("8.0.36", "SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"),
])
def test_the_replica_uses_the_names_of_the_version(version: str, asked: str, never: str, corpus_dir: Path,
                                                   tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS["8.4-percona"])
    with serving(paths, version=version) as srv:
        lines = stream_lines(plain_url(srv), "--start", "binlog.000001:4")
        said = list(srv.primary.statements)
    assert_same_changes(lines, decode_lines(paths))
    assert asked in said and never not in said
    assert "SET @source_binlog_checksum = 'CRC32'" in said


def test_blocking_dump_heartbeats_at_the_requested_period(corpus_dir: Path, tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[CHAIN])
    with serving(paths) as srv:
        with MySQLConnection.connect("127.0.0.1", srv.port, USER, PASSWORD, ssl_mode="DISABLED",
                                     allow_public_key_retrieval=True) as c:
            c.execute("SET @master_binlog_checksum = 'CRC32'")
            c.execute("SET @master_heartbeat_period = 200000000")  # 0.2 s in ns
            c.send_command(dlg.COM_BINLOG_DUMP, dlg.binlog_dump_payload("binlog.000002", 847, 77, non_block=False))
            c.read_timeout = 2.0
            dec = BinlogDecoder(checksum=ChecksumAlg.CRC32)
            beats: list[tuple[float, HeartbeatEvent]] = []
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.5:
                sp = dlg.parse_stream_packet(c.read_packet(), False)
                for ev in dec.decode_event(sp.event):
                    if isinstance(ev, HeartbeatEvent):
                        beats.append((time.monotonic(), ev))
    assert 5 <= len(beats) <= 9
    gaps = [b[0] - a[0] for a, b in zip(beats, beats[1:])]
    assert all(0.15 <= g <= 0.45 for g in gaps), gaps
    assert all(ev.header.log_pos == 847 for _, ev in beats)
    assert "binlog.000002" in json.dumps(beats[0][1].summary())


def test_blocking_stream_tails_a_growing_binlog(corpus_dir: Path, tmp_path: Path) -> None:
    """The replica waits at the end (heartbeats keep the link alive) and gets each transaction
    as the file grows, the way a live primary's replica does."""
    src = corpus_dir / MYSQL_SETS[CHAIN][0][1]
    data = src.read_bytes()
    live = tmp_path / "binlog.000001"
    live.write_bytes(data[:642])
    expected = decode_lines([src])
    with serving([live]) as srv:
        url = ServerURL.parse(plain_url(srv))
        bs = BinlogStream(url, StreamOptions(start=Position("binlog.000001", 4), heartbeat=0.2,
                                             stop_at=("binlog.000001", 1472), reconnect=False))
        got: list[str] = []
        done = threading.Event()

        def consume() -> None:
            try:
                for rec in bs.changes():
                    got.append(json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":")))
            finally:
                done.set()

        t = threading.Thread(target=consume, daemon=True)
        t.start()
        assert wait_until(lambda: len(got) == 1)  # the first insert, before the cut
        time.sleep(0.6)  # idle: heartbeats only
        assert len(got) == 1 and not done.is_set()
        with live.open("ab") as fh:
            fh.write(data[642:919])
        assert wait_until(lambda: len(got) == 2)
        with live.open("ab") as fh:
            fh.write(data[919:])
        assert done.wait(10)
        t.join(5)
    assert got == [line.replace(src.name, "binlog.000001") for line in expected]


def _tx_ends(paths: list[Path]) -> list[tuple[str, int]]:
    """Where each transaction ends, from the decoded files (a replica's view, independent of the
    primary's raw-event bookkeeping)."""
    ends = []
    for p in paths:
        explicit = False
        for ev in read_events(p):
            if ev.inner_index is not None:
                continue
            t = ev.type_name
            if isinstance(ev, MariaGtidEvent):
                explicit = not ev.standalone  # MariaDB writes no BEGIN after such a GTID
            elif t in ("XID", "TRANSACTION_PAYLOAD", "XA_PREPARE"):
                ends.append((p.name, ev.end))
                explicit = False
            elif isinstance(ev, QueryEvent) and t == "QUERY":
                q = ev.query.lstrip().upper()
                if q.startswith(("BEGIN", "XA START")):
                    explicit = True
                elif q.startswith("XA END"):
                    pass
                elif q.startswith(("COMMIT", "ROLLBACK")) or not explicit:
                    ends.append((p.name, ev.end))
                    explicit = False
    return ends


@pytest.mark.parametrize("files, flavor", [
    (MYSQL_SETS[CHAIN], "mysql"),
    (MYSQL_SETS["8.0.31-zstd-payloads"], "mysql"),
    (MARIADB_CHAIN[5:7], "mariadb"),  # XA PREPARE / XA COMMIT, three GTID domains
], ids=["8.0-chain", "8.0-payloads", "mariadb-xa"])
def test_semi_sync_acks_at_every_transaction_end(files: list, flavor: str, corpus_dir: Path,
                                                 tmp_path: Path) -> None:
    paths = link_files(corpus_dir, tmp_path, files)
    ends = _tx_ends(paths)
    assert len(ends) >= 3
    with serving(paths, flavor=flavor, semi_sync=True) as srv:
        url = plain_url(srv) if flavor == "mysql" else srv.url(USER, PASSWORD, ssl_mode="DISABLED")
        lines = stream_lines(url, "--semi-sync", "--start", f"{paths[0].name}:4")
        primary = srv.primary
        assert wait_until(lambda: len(primary.acks) >= len(ends))
        requested = [(f, pos) for _, f, pos in primary.ack_requests]
        acks = primary.acks
    assert requested == ends
    assert [(a.file, a.pos) for a in acks] == ends
    assert all(a.requested and a.server_id == 6449519 for a in acks)
    assert_same_changes(lines, decode_lines(paths))


def test_semi_sync_replica_against_a_primary_without_it(corpus_dir: Path, tmp_path: Path) -> None:
    """A primary without semi-sync sends plain events; the replica must say so clearly."""
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS[CHAIN])
    with serving(paths) as srv:
        r = run_cli("stream", plain_url(srv), "--semi-sync", "--until-end", "--start", "binlog.000001:4")
        assert srv.primary.acks == []
    assert r.returncode != 0 and "semi-sync" in r.stderr.lower(), r.stderr


def test_replica_resumes_exactly_after_the_primary_cuts_it(corpus_dir: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Three cuts in the middle of 131k row changes: no row lost, none twice."""
    from binlake.serve.server import PrimaryServer

    def paced(sock: Any, conn: Any) -> None:
        # The whole 3 MB binlog fits in the sockets' buffers: sent at full speed, it could
        # all be on the replica's side before the first cut, which then cuts nothing. Paced
        # at ~4 MB/s, most of it is still to send when the replica reaches the cut.
        data = conn.data_to_send()
        for i in range(0, len(data), 4096):
            sock.sendall(data[i:i + 4096])
            time.sleep(0.001)

    monkeypatch.setattr(PrimaryServer, "_flush", staticmethod(paced))
    paths = link_files(corpus_dir, tmp_path, MYSQL_SETS["9.5-7090-rows-events"])
    decoded = decode_lines(paths)
    rows = [line for line in decoded if is_row_change(line)]
    statements = [line for line in decoded if not is_row_change(line)]
    cuts = {2_000, 60_000, 60_001}
    with serving(paths) as srv:
        bs = BinlogStream(ServerURL.parse(plain_url(srv)),
                          StreamOptions(start=Position("binlog.000001", 4), until_end=True, max_reconnect_wait=0.2))
        got = []
        for rec in bs.changes():
            got.append(json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":")))
            if len(got) in cuts:
                srv.drop_connections()
        served = srv.connections_served
    assert bs.reconnects >= 1 and served >= 2
    assert [line for line in got if is_row_change(line)] == rows  # none lost, none twice
    assert [line for line in got if not is_row_change(line)] in ([], statements)
