"""The replication command payloads, both ways: COM_REGISTER_SLAVE, COM_BINLOG_DUMP and
COM_BINLOG_DUMP_GTID as dataclasses with parse (what binlake's primary reads) and build (what
binlake's replica sends), so the two sides share one encoding. `payload()` is the command's
body, `build()` the same after its command byte."""
from __future__ import annotations

from dataclasses import dataclass

from . import wire
from .capabilities import Command

#: COM_BINLOG_DUMP flag: answer with EOF instead of waiting when the last binlog ends
BINLOG_DUMP_NON_BLOCK = 0x01
#: COM_BINLOG_DUMP_GTID flag: the GTID set follows
BINLOG_THROUGH_GTID = 0x04


@dataclass(repr=False)
class RegisterReplica:
    """COM_REGISTER_SLAVE: a replica announces itself (seen in SHOW REPLICAS)."""

    server_id: int
    hostname: str = ""
    user: str = ""
    password: str = ""
    port: int = 0
    rank: int = 0
    master_id: int = 0

    def __repr__(self) -> str:
        return (f"RegisterReplica(server_id={self.server_id}, hostname={self.hostname!r}, "
                f"user={self.user!r}, port={self.port})")

    @classmethod
    def parse(cls, body: wire.Buffer) -> "RegisterReplica":
        r = wire.Reader(body)
        server_id = r.u32("server id")
        host = r.fixed(r.u8("hostname length"), "hostname").decode("utf-8", "replace")
        user = r.fixed(r.u8("user length"), "user").decode("utf-8", "replace")
        pw = r.fixed(r.u8("password length"), "password").decode("utf-8", "replace")
        port = r.u16("port")
        rank = r.u32("rank") if r.remaining() >= 4 else 0
        master = r.u32("master id") if r.remaining() >= 4 else 0
        return cls(server_id, host, user, pw, port, rank, master)

    def build(self) -> bytes:
        return bytes((Command.REGISTER_SLAVE,)) + self.payload()

    def payload(self) -> bytes:
        def short(s: str) -> bytes:
            b = s.encode("utf-8")[:255]
            return bytes((len(b),)) + b

        return (wire.int4(self.server_id) + short(self.hostname) + short(self.user)
                + short(self.password) + wire.int2(self.port) + wire.int4(self.rank)
                + wire.int4(self.master_id))


@dataclass
class BinlogDump:
    """COM_BINLOG_DUMP: stream from a file and position (MariaDB GTID mode also uses this,
    after setting @slave_connect_state)."""

    position: int
    server_id: int
    filename: str = ""
    flags: int = 0

    @classmethod
    def parse(cls, body: wire.Buffer) -> "BinlogDump":
        r = wire.Reader(body)
        pos = r.u32("binlog position")
        flags = r.u16("flags")
        server_id = r.u32("server id")
        # the server reads the name as a C string: it ends at the first NUL, and an empty one
        # means the first binlog (python-mysql-replication sends NUL bytes for "no file")
        name = bytes(r.rest()).split(b"\0", 1)[0].decode("utf-8", "replace")
        return cls(pos, server_id, name, flags)

    def build(self) -> bytes:
        return bytes((Command.BINLOG_DUMP,)) + self.payload()

    def payload(self) -> bytes:
        return (wire.int4(self.position) + wire.int2(self.flags) + wire.int4(self.server_id)
                + self.filename.encode("utf-8"))


@dataclass
class BinlogDumpGtid:
    """COM_BINLOG_DUMP_GTID (MySQL): stream from a GTID set (its encoded SID blocks in ``gtid_data``)."""

    server_id: int
    filename: str = ""
    position: int = 4
    gtid_data: bytes = b""
    flags: int = BINLOG_THROUGH_GTID

    @classmethod
    def parse(cls, body: wire.Buffer) -> "BinlogDumpGtid":
        r = wire.Reader(body)
        flags = r.u16("flags")
        server_id = r.u32("server id")
        name = r.fixed(r.u32("file name length"), "file name").decode("utf-8", "replace")
        pos = r.u64("binlog position")
        data = b""
        if flags & BINLOG_THROUGH_GTID:
            data = r.fixed(r.u32("GTID data size"), "GTID data")
        return cls(server_id, name, pos, data, flags)

    def build(self) -> bytes:
        return bytes((Command.BINLOG_DUMP_GTID,)) + self.payload()

    def payload(self) -> bytes:
        name = self.filename.encode("utf-8")
        out = (wire.int2(self.flags) + wire.int4(self.server_id) + wire.int4(len(name)) + name
               + wire.int8(self.position))
        if self.flags & BINLOG_THROUGH_GTID:
            out += wire.int4(len(self.gtid_data)) + self.gtid_data
        return out
