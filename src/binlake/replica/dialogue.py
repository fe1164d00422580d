"""The replication dialogue, sans-IO: what a replica says before and during a binlog dump,
and how to read what the primary sends back. The socket loop lives in stream.py."""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import ProtocolError, ServerError
from ..protocol.replication import (BINLOG_DUMP_NON_BLOCK, BINLOG_THROUGH_GTID, BinlogDump,
                                    BinlogDumpGtid, RegisterReplica)
from ..protocol.results import Row
from .._util.versions import version_tuple as version_tuple  # (spark/stream_source uses it)

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E

BINLOG_THROUGH_POSITION = 0x02

SEMI_SYNC_MAGIC = 0xEF
SEMI_SYNC_NEED_ACK = 0x01

MARIA_SLAVE_CAPABILITY_GTID = 4

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


def setup_statements(flavor: str, version: str, *, checksum: str, heartbeat_period: float,
                     replica_uuid: str, semi_sync: bool, gtid_state: str | None = None
                     ) -> list[str]:
    """SET statements a replica sends before COM_REGISTER_SLAVE / COM_BINLOG_DUMP.

    MySQL 8.0.26+ renamed master->source and slave->replica; both names are set where the
    server knows them (unknown user variables are harmless in SET @var).
    """
    period_ns = int(heartbeat_period * 1_000_000_000)
    stmts = [
        f"SET @master_binlog_checksum = '{checksum}'",
        f"SET @source_binlog_checksum = '{checksum}'",
        f"SET @master_heartbeat_period = {period_ns}",
        f"SET @source_heartbeat_period = {period_ns}",
        f"SET @slave_uuid = '{replica_uuid}'",
        f"SET @replica_uuid = '{replica_uuid}'",
    ]
    if flavor == "mariadb":
        stmts.append(f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}")
        if gtid_state is not None:
            stmts += [f"SET @slave_connect_state = '{gtid_state}'",
                      "SET @slave_gtid_strict_mode = 1",
                      "SET @slave_gtid_ignore_duplicates = 0"]
        if semi_sync:
            stmts.append("SET @rpl_semi_sync_slave = 1")
    elif semi_sync:
        stmts += ["SET @rpl_semi_sync_slave = 1", "SET @rpl_semi_sync_replica = 1"]
    return stmts


def register_slave_payload(server_id: int, host: str = "", user: str = "", password: str = "",
                           port: int = 0) -> bytes:
    """COM_REGISTER_SLAVE: makes the replica visible in SHOW SLAVE HOSTS / SHOW REPLICAS."""
    return RegisterReplica(server_id, host, user, password, port).payload()


def binlog_dump_payload(file: str, pos: int, server_id: int, non_block: bool) -> bytes:
    """COM_BINLOG_DUMP (file + 4-byte position)."""
    if pos > 0xFFFFFFFF:
        raise ProtocolError(f"position {pos} does not fit COM_BINLOG_DUMP; use GTID positioning")
    flags = BINLOG_DUMP_NON_BLOCK if non_block else 0
    return BinlogDump(pos, server_id, file, flags).payload()


def binlog_dump_gtid_payload(gtid_data: bytes, server_id: int, non_block: bool,
                             file: str = "", pos: int = 4) -> bytes:
    """COM_BINLOG_DUMP_GTID (MySQL): flags, server id, file name, 8-byte position, GTID set."""
    flags = BINLOG_THROUGH_GTID | (BINLOG_DUMP_NON_BLOCK if non_block else 0)
    return BinlogDumpGtid(server_id, file, pos, gtid_data, flags).payload()


def semi_sync_ack_payload(file: str, pos: int) -> bytes:
    """The ACK a semi-sync replica sends: magic, 8-byte position, file name."""
    return bytes([SEMI_SYNC_MAGIC]) + struct.pack("<Q", pos) + file.encode()


def not_null(value: str | None, what: str) -> str:
    """A result-set value the server never leaves NULL; NULL is a protocol error naming it."""
    if value is None:
        raise ProtocolError(f"the primary answered NULL for {what}")
    return value


def binary_logs(rows: list[Row]) -> list[tuple[str, int]]:
    """SHOW BINARY LOGS as (file name, size in bytes), oldest first."""
    return [(not_null(r[0], "a binlog file name"), int(not_null(r[1], "a binlog file size")))
            for r in rows]


@dataclass(slots=True)
class StreamPacket:
    kind: str  # event | eof | error
    event: memoryview | None = None
    need_ack: bool = False


def parse_stream_packet(pkt: memoryview, semi_sync: bool) -> StreamPacket:
    """One packet of the dump stream: 0x00 + [semi-sync header] + event, EOF, or ERR."""
    if not len(pkt):
        raise ProtocolError("empty packet in the binlog stream")
    first = pkt[0]
    if first == 0x00:
        if semi_sync:
            if len(pkt) < 3 or pkt[1] != SEMI_SYNC_MAGIC:
                raise ProtocolError("semi-sync was enabled but the event lacks its 0xEF header")
            return StreamPacket("event", pkt[3:], bool(pkt[2] & SEMI_SYNC_NEED_ACK))
        return StreamPacket("event", pkt[1:])
    if first == 0xFE and len(pkt) < 9:
        return StreamPacket("eof")
    if first == 0xFF:
        raise stream_error(pkt)
    raise ProtocolError(f"unexpected packet 0x{first:02x} in the binlog stream")


def stream_error(pkt: memoryview) -> ServerError:
    code = int.from_bytes(pkt[1:3], "little")
    rest = bytes(pkt[3:])
    state = ""
    if rest[:1] == b"#":
        state, rest = rest[1:6].decode("ascii", "replace"), rest[6:]
    message = rest.decode("utf-8", "replace")
    hint = None
    if code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
        low = message.lower()
        if "purged" in low or "could not find" in low or "not find first log" in low or "gtid" in low:
            hint = ("the position is no longer in the primary's binlogs (purged or never there); "
                    "re-snapshot the tables, then stream from the new position")
        else:
            hint = "the primary cannot serve this position; check the position and the binlog files"
    return ServerError(code, message, state, hint=hint)
