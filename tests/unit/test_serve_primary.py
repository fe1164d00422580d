"""binlake's primary without sockets: a ClientConnection talks to ServerConnection + Session in
memory, so every reply (result sets, errors, the dump's packets, heartbeats on a fake clock,
semi-sync headers) is checked byte for byte against the served files.
"""
from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest

from binlake.binlog.constants import EventType as E
from binlake.gtid.sets import MySQLGtidSet
from binlake.protocol import NEED_DATA
from binlake.protocol.auth import NATIVE_PASSWORD, Account
from binlake.protocol.client import ClientConnection, ColumnsReceived, Packet, ResultSetDone, Rows
from binlake.protocol.results import ErrPacket, OkPacket
from binlake.protocol.server import Authenticated, BinlogDump, BinlogDumpGtid, ServerConnection
from binlake.serve.primary import DumpStatus, Primary, ServeConfig
from binlake.serve.store import BinlogStore

CHAIN = ("percona-binlog-server/data_80045_gtid_binlog.000001",
         "percona-binlog-server/data_80045_gtid_binlog.000002")
UUID80 = "396e294c-1ca4-11f1-9ae7-00155da79c6b"
TAGGED = "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
MARIA = "generated-mariadb-10.11/mariadb-10.11.19-gtid-domains-xa.000001"


class Wire:
    """A client and binlake's primary joined in memory; `now` is the primary's clock."""

    def __init__(self, primary: Primary) -> None:
        self.primary = primary
        self.s = ServerConnection({"u": Account("pw", NATIVE_PASSWORD)}, server_version=primary.greeting_version,
                                  default_plugin=NATIVE_PASSWORD)
        self.c = ClientConnection("u", "pw")
        self.session = None
        self.now = 1000.0
        self.exchange()
        assert self.session is not None

    def exchange(self) -> list[object]:
        events: list[object] = []
        while True:
            moved = False
            data = self.s.data_to_send()
            if data:
                self.c.receive_data(data)
                moved = True
            while (ev := self.c.next_event()) is not NEED_DATA:
                events.append(ev)
            data = self.c.data_to_send()
            if data:
                self.s.receive_data(data)
                moved = True
            while (ev := self.s.next_event()) is not NEED_DATA:
                moved = True
                if isinstance(ev, Authenticated):
                    self.session = self.primary.session(self.s, user=ev.user)
                else:
                    self.session.handle(ev, self.now)
            if not moved:
                return events

    def query(self, sql: str) -> list[tuple] | ErrPacket | OkPacket:
        self.c.send_query(sql)
        rows: list[tuple] = []
        self.columns: list[str] = []
        for ev in self.exchange():
            if isinstance(ev, (ErrPacket, OkPacket)):
                return ev
            if isinstance(ev, ColumnsReceived):
                self.columns = [c.name for c in ev.columns]
            elif isinstance(ev, Rows):
                rows.extend(tuple(r) for r in ev.rows)
            elif isinstance(ev, ResultSetDone):
                return rows
        raise AssertionError("no reply")

    def dump(self, request: BinlogDump | BinlogDumpGtid) -> list[bytes]:
        """Send a dump command; return the packets it produced until it waits or ends."""
        self.c.send_command(request.build()[0], request.build()[1:], response="raw")
        packets = [ev.payload for ev in self.exchange() if isinstance(ev, Packet)]
        return packets + self.pump()

    def pump(self) -> list[bytes]:
        d = self.session.dump
        out: list[bytes] = []
        while d.status is DumpStatus.MORE:
            d.pump(self.now)
            out += [ev.payload for ev in self.exchange() if isinstance(ev, Packet)]
        return out


def primary_for(corpus: Path, *names: str, **config) -> Primary:
    return Primary(BinlogStore([corpus / n for n in names]), ServeConfig(**config))


def events_of(packets: list[bytes], semi_sync: bool = False) -> list[bytes]:
    """Binlog events of OK packets (0x00 [+ 0xEF flag]); EOF/ERR dropped."""
    out = []
    for p in packets:
        if p[0] == 0:
            out.append(p[3:] if semi_sync else p[1:])
    return out


def file_events(path: Path, start: int = 4, stop: int | None = None) -> list[bytes]:
    """The raw events of a file that start in [start, stop)."""
    data = path.read_bytes()
    out, pos = [], 4
    while pos < len(data) and (stop is None or pos < stop):
        n = int.from_bytes(data[pos + 9:pos + 13], "little")
        if pos >= start:
            out.append(data[pos:pos + n])
        pos += n
    return out


def header(ev: bytes) -> dict:
    return {"type": ev[4], "server_id": int.from_bytes(ev[5:9], "little"), "size": int.from_bytes(ev[9:13], "little"),
            "log_pos": int.from_bytes(ev[13:17], "little"), "flags": int.from_bytes(ev[17:19], "little")}


def crc_ok(ev: bytes) -> bool:
    return zlib.crc32(ev[:-4]) == int.from_bytes(ev[-4:], "little")


# -- set-up statements ---------------------------------------------------------------------------


def test_mysql_84_answers_what_a_replica_asks(corpus_dir: Path) -> None:
    p = primary_for(corpus_dir, *CHAIN, flavor="mysql", server_version="8.4.3-binlake", server_id=7)
    w = Wire(p)
    assert w.c.server_version == "8.4.3-binlake" and not w.c.is_mariadb
    assert w.query("SELECT @@version, @@global.binlog_checksum, @@server_id, @@global.gtid_mode, @@log_bin") == [
        ("8.4.3-binlake", "CRC32", "7", "ON", "1")]
    assert w.columns == ["@@version", "@@global.binlog_checksum", "@@server_id", "@@global.gtid_mode", "@@log_bin"]
    assert w.query("SELECT @@gtid_executed AS g")[0] == (f"{UUID80}:1-6",)
    assert w.columns == ["g"]
    assert w.query("SELECT @@global.gtid_purged") == [("",)]
    assert int(w.query("SELECT UNIX_TIMESTAMP()")[0][0]) > 1_700_000_000
    # 8.4 removed SHOW MASTER STATUS: a parse error, as drivers expect (they fall back on 1064)
    err = w.query("SHOW MASTER STATUS")
    assert isinstance(err, ErrPacket) and err.code == 1064 and err.sql_state == "42000"
    assert w.query("SHOW BINARY LOG STATUS") == [("data_80045_gtid_binlog.000002", "847", "", "", f"{UUID80}:1-6")]
    assert w.columns == ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
    assert w.query("SHOW BINARY LOGS") == [("data_80045_gtid_binlog.000001", "1516", "No"),
                                           ("data_80045_gtid_binlog.000002", "847", "No")]
    assert isinstance(w.query("SET @master_binlog_checksum = @@global.binlog_checksum, @x := 'it''s'"), OkPacket)
    assert isinstance(w.query("SET NAMES utf8mb4"), OkPacket)
    assert w.query("SELECT @master_binlog_checksum, @x, @unset") == [("CRC32", "it's", None)]
    assert w.query("SHOW GLOBAL VARIABLES LIKE 'binlog_check%'") == [("binlog_checksum", "CRC32")]
    assert w.query("SHOW VARIABLES WHERE Variable_name = 'log_bin'") == [("log_bin", "ON")]
    err = w.query("SELECT @@no_such_thing")
    assert isinstance(err, ErrPacket) and err.code == 1193 and "no_such_thing" in err.message
    assert isinstance(w.query("DROP TABLE x"), ErrPacket)
    assert w.query("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'a'") == []
    assert "SHOW BINARY LOG STATUS" in p.statements


def test_mysql_80_names(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN, flavor="mysql", server_version="8.0.36"))
    assert w.query("SHOW MASTER STATUS")[0][:2] == ("data_80045_gtid_binlog.000002", "847")
    err = w.query("SHOW BINARY LOG STATUS")  # arrived in 8.2
    assert isinstance(err, ErrPacket) and err.code == 1064


def test_mariadb_flavor(corpus_dir: Path) -> None:
    p = primary_for(corpus_dir, MARIA, flavor="mariadb")
    w = Wire(p)
    assert w.c.is_mariadb and w.c.server_version == "10.11.9-MariaDB-binlake"
    assert p.greeting_version.startswith("5.5.5-")
    pos = w.query("SELECT @@global.gtid_binlog_pos")[0][0]
    assert pos == str(p.store.gtid_binlog_pos()) and pos
    status = w.query("SHOW MASTER STATUS")
    assert w.columns == ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"]
    assert status[0][0] == Path(MARIA).name
    assert isinstance(w.query("SHOW BINARY LOG STATUS"), ErrPacket)
    # BINLOG_GTID_POS at the end of the file is the binlog position
    assert w.query(f"SELECT BINLOG_GTID_POS('{status[0][0]}', {status[0][1]})") == [(pos,)]


# -- the dump ----------------------------------------------------------------------------------


def test_dump_from_the_middle_sends_rotate_fde_then_the_file(corpus_dir: Path) -> None:
    p = primary_for(corpus_dir, *CHAIN, server_id=9)
    w = Wire(p)
    w.query("SET @source_binlog_checksum = 'CRC32'")
    packets = w.dump(BinlogDump(642, 99, "data_80045_gtid_binlog.000001", 0x01))
    assert packets[-1][0] == 0xFE and len(packets[-1]) < 9  # EOF: non-blocking
    evs = events_of(packets)
    rot = header(evs[0])
    assert rot["type"] == E.ROTATE and rot["flags"] & 0x20 and rot["log_pos"] == 0 and rot["server_id"] == 9
    assert evs[0][19:27] == (642).to_bytes(8, "little") and evs[0][27:-4] == b"data_80045_gtid_binlog.000001"
    assert crc_ok(evs[0])
    fde = header(evs[1])
    assert fde["type"] == E.FORMAT_DESCRIPTION and fde["log_pos"] == 0 and not fde["flags"] & 1 and crc_ok(evs[1])
    f1, f2 = (corpus_dir / n for n in CHAIN)
    rest = file_events(f1, 642)
    assert evs[2:2 + len(rest)] == rest
    # then the next file: artificial ROTATE to it at 4, its FDE (log_pos kept), all its events
    tail = evs[2 + len(rest):]
    assert header(tail[0])["type"] == E.ROTATE and tail[0][27:-4] == b"data_80045_gtid_binlog.000002"
    assert header(tail[1])["log_pos"] == 126
    assert tail[2:] == file_events(f2, 126)
    assert w.session.dump.status is DumpStatus.DONE


@pytest.mark.parametrize("request_, message", [
    (BinlogDump(4, 5, "nope.000001", 1), "Could not find first log file name in binary log index file"),
    (BinlogDump(99999, 5, "data_80045_gtid_binlog.000001", 1), "position > file size"),
    (BinlogDump(700, 5, "data_80045_gtid_binlog.000001", 1), "impossible position"),
    (BinlogDump(2, 5, "data_80045_gtid_binlog.000001", 1), "position < 4"),
])
def test_dump_refusals_are_err_1236(corpus_dir: Path, request_: BinlogDump, message: str) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN))
    w.query("SET @master_binlog_checksum = 'CRC32'")
    packets = w.dump(request_)
    assert len(packets) == 1 and packets[0][0] == 0xFF
    assert int.from_bytes(packets[0][1:3], "little") == 1236 and message.encode() in packets[0]


def test_replica_that_does_not_announce_checksums_is_refused(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN))
    packets = w.dump(BinlogDump(4, 5, "", 1))
    assert packets[-1][0] == 0xFF and b"can not handle replication events with the checksum" in packets[-1]


def test_gtid_dump_skips_what_the_replica_has_tagged(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, TAGGED))
    w.query("SET @master_binlog_checksum = 'CRC32'")
    uuid = "55778904-0299-11f1-b1b8-4ef0c4956feb"
    have = MySQLGtidSet(f"{uuid}:1-13:mytag:1-2")
    evs = events_of(w.dump(BinlogDumpGtid(5, gtid_data=have.encode_for_dump(), flags=0x05)))
    assert E.GTID_TAGGED in [e[4] for e in evs] and E.WRITE_ROWS_V2 in [e[4] for e in evs]
    w2 = Wire(w.primary)
    w2.query("SET @master_binlog_checksum = 'CRC32'")
    have = MySQLGtidSet(f"{uuid}:1-13:mytag:1-3")
    packets = w2.dump(BinlogDumpGtid(5, gtid_data=have.encode_for_dump(), flags=0x05))
    types = [e[4] for e in events_of(packets)]
    # the transaction is skipped whole; events outside transactions still go out
    assert types == [E.ROTATE, E.FORMAT_DESCRIPTION, E.PREVIOUS_GTIDS, E.ROTATE]
    assert packets[-1][0] == 0xFE


def test_blocking_dump_heartbeats_on_the_replicas_period(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN))
    w.query("SET @master_binlog_checksum = 'CRC32', @master_heartbeat_period = 500000000")
    w.dump(BinlogDump(4, 5, "data_80045_gtid_binlog.000002", 0))
    d = w.session.dump
    assert d.status is DumpStatus.WAITING and d.heartbeat_period == 0.5
    assert d.wait_time(w.now) == pytest.approx(0.2)  # the folder is looked at every POLL
    beats = []
    for step in range(1, 11):
        d.tick(w.now + step * 0.1)
        beats += [e for e in events_of([ev.payload for ev in w.exchange() if isinstance(ev, Packet)])]
    assert len(beats) == 2  # at 0.5 s and 1.0 s
    h = header(beats[0])
    assert h["type"] == E.HEARTBEAT and h["log_pos"] == 847 and beats[0][19:-4] == b"data_80045_gtid_binlog.000002"
    assert crc_ok(beats[0])


def test_semi_sync_headers_and_ack_requests(corpus_dir: Path) -> None:
    p = primary_for(corpus_dir, *CHAIN, semi_sync=True)
    w = Wire(p)
    w.query("SET @master_binlog_checksum = 'CRC32', @rpl_semi_sync_replica = 1")
    assert w.query("SELECT @@rpl_semi_sync_source_enabled") == [("1",)]
    packets = w.dump(BinlogDump(4, 5, "", 1))
    body = [pk for pk in packets if pk[0] == 0]
    assert all(pk[1] == 0xEF for pk in body)
    flagged = [(pk[3 + 4], int.from_bytes(pk[3 + 13:3 + 17], "little")) for pk in body if pk[2] & 1]
    # the CREATE TABLE (a QUERY), then every XID: each transaction's last event
    assert flagged == [(E.QUERY, 365), (E.XID, 642), (E.XID, 919), (E.XID, 1472), (E.XID, 529), (E.XID, 824)]
    assert [(f, pos) for _, f, pos in p.ack_requests] == [
        ("data_80045_gtid_binlog.000001", 365), ("data_80045_gtid_binlog.000001", 642),
        ("data_80045_gtid_binlog.000001", 919), ("data_80045_gtid_binlog.000001", 1472),
        ("data_80045_gtid_binlog.000002", 529), ("data_80045_gtid_binlog.000002", 824)]
    ack = w.session.on_ack((642).to_bytes(8, "little") + b"data_80045_gtid_binlog.000001")
    assert ack is not None and ack.requested and p.acks == [ack]


def test_semi_sync_off_on_the_server_means_plain_packets(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN))
    w.query("SET @master_binlog_checksum = 'CRC32', @rpl_semi_sync_slave = 1")
    assert isinstance(w.query("SELECT @@rpl_semi_sync_master_enabled"), ErrPacket)  # no plugin
    packets = w.dump(BinlogDump(4, 5, "", 1))
    assert all(pk[1] != 0xEF for pk in packets if pk[0] == 0)


def test_blocking_dump_tails_a_growing_file_and_follows_a_new_one(corpus_dir: Path, tmp_path: Path) -> None:
    src1, src2 = (corpus_dir / n for n in CHAIN)
    data = src1.read_bytes()
    cut = 700  # inside the event that starts at 642
    live = tmp_path / "binlog.000001"
    live.write_bytes(data[:cut])
    p = Primary(BinlogStore(tmp_path), ServeConfig())
    w = Wire(p)
    w.query("SET @master_binlog_checksum = 'CRC32'")
    first = events_of(w.dump(BinlogDump(4, 5, "", 0)))
    assert first[2:] == file_events(src1, 126, 642)  # the half-written event at 642 waits
    assert w.session.dump.status is DumpStatus.WAITING
    with live.open("ab") as fh:
        fh.write(data[cut:])
    w.session.dump.tick(w.now + 1)
    more = events_of(w.pump())
    assert more == file_events(src1, 642)
    shutil.copy(src2, tmp_path / "binlog.000002")
    w.session.dump.tick(w.now + 2)
    nxt = events_of(w.pump())
    assert nxt[0][27:-4] == b"binlog.000002" and nxt[2:] == file_events(src2, 126)
    assert w.session.dump.status is DumpStatus.WAITING


def test_little_sql(corpus_dir: Path) -> None:
    w = Wire(primary_for(corpus_dir, *CHAIN))
    assert w.query("select @@version v, 'a, b FROM c' AS `odd name`, 42, NULL, -1.5 /* comment */;") == [
        ("8.4.3-binlake", "a, b FROM c", "42", None, "-1.5")]
    assert w.columns == ["v", "odd name", "42", "NULL", "-1.5"]
    assert w.query("SHOW VARIABLES LIKE 'gtid\\_mode'") == [("gtid_mode", "ON")]
    assert w.query("SHOW VARIABLES LIKE 'binlog_row_%'") == [("binlog_row_image", "FULL"), ("binlog_row_metadata", "FULL")]
    assert w.query("SHOW VARIABLES WHERE Variable_name IN ('server_id', 'log_bin')") == [("log_bin", "ON"), ("server_id", "1")]
    assert w.query("SELECT @@version_comment LIMIT 1")[0][0].startswith("binlake")
    err = w.query("SELECT a FROM shop.orders")
    assert isinstance(err, ErrPacket) and err.code == 1146
    err = w.query("SELECT nosuchfn()")
    assert isinstance(err, ErrPacket) and err.code == 1305
    assert isinstance(w.query(""), ErrPacket)
    assert isinstance(w.query("BEGIN"), OkPacket) and isinstance(w.query("COMMIT"), OkPacket)
    assert w.query("SHOW BINLOG EVENTS IN 'data_80045_gtid_binlog.000002' FROM 126 LIMIT 2") == [
        ("data_80045_gtid_binlog.000002", "126", "PREVIOUS_GTIDS", "1", "197", ""),
        ("data_80045_gtid_binlog.000002", "197", "GTID", "1", "276", "")]


def test_encrypted_mariadb_binlog_is_refused_not_garbled(corpus_dir: Path) -> None:
    p = primary_for(corpus_dir, "generated-mariadb-10.11/mariadb-10.11.19-encrypted-row-full-crc32.000001",
                    flavor="mariadb")
    w = Wire(p)
    w.query("SET @master_binlog_checksum = 'CRC32'")
    packets = w.dump(BinlogDump(4, 5, "", 1))
    assert packets[-1][0] == 0xFF and b"encrypted" in packets[-1]
