"""Small control events: rotate, xid, intvar, rand, user variables, incidents, heartbeats,
annotations, checkpoints, XA prepare, and the statement-era LOAD DATA blocks."""
from __future__ import annotations

import struct
from decimal import Decimal

from ...errors import DecodeError
from ..constants import EventType as E
from ..events import (
    AnnotateRowsEvent, BinlogCheckpointEvent, EventBase, HeartbeatEvent, IncidentEvent, IntvarEvent,
    OpaqueEvent, RandEvent, RotateEvent, RowsQueryEvent, StartEncryptionEvent, StopEvent,
    UserVarEvent, XaPrepareEvent, XidEvent,
)
from ..wire import packed_int, raw, text, u32, u64, uint_n


def decode_rotate(body: bytes, base: EventBase, post_header_len: int) -> RotateEvent:
    position = 4
    pos = 0
    if post_header_len >= 8:
        position, pos = u64(body, 0, "rotate position")
    return RotateEvent(**base, next_file=text(body[pos:]), position=position)


def decode_stop(body: bytes, base: EventBase) -> StopEvent:
    return StopEvent(**base)


def _exact(body: bytes, size: int, what: str) -> None:
    if len(body) != size:
        raise DecodeError(f"{what} body has {len(body)} bytes, expected {size}",
                          hint="the event is malformed or corrupt")


def decode_xid(body: bytes, base: EventBase) -> XidEvent:
    _exact(body, 8, "XID")
    xid, _ = u64(body, 0, "xid")
    return XidEvent(**base, xid=xid)


def decode_intvar(body: bytes, base: EventBase) -> IntvarEvent:
    _exact(body, 9, "INTVAR")
    kind, pos = uint_n(body, 0, 1, "intvar type")
    value, _ = u64(body, pos, "intvar value")
    names = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}
    if kind not in names:
        raise DecodeError(f"unknown INTVAR type {kind}")
    return IntvarEvent(**base, kind=names[kind], value=value)


def decode_rand(body: bytes, base: EventBase) -> RandEvent:
    _exact(body, 16, "RAND")
    s1, pos = u64(body, 0, "rand seed1")
    s2, _ = u64(body, pos, "rand seed2")
    return RandEvent(**base, seed1=s1, seed2=s2)


_UV_TYPES = {0: "STRING", 1: "REAL", 2: "INT", 3: "ROW", 4: "DECIMAL"}


def decode_user_var(body: bytes, base: EventBase) -> UserVarEvent:
    from ..columns.decimal import decode_decimal

    name_len, pos = u32(body, 0, "user var name length")
    name, pos = raw(body, pos, name_len, "user var name")
    is_null, pos = uint_n(body, pos, 1, "user var null flag")
    if is_null:
        return UserVarEvent(**base, name=text(name), value=None, value_type=None, charset=None)
    vtype, pos = uint_n(body, pos, 1, "user var type")
    charset, pos = u32(body, pos, "user var charset")
    vlen, pos = u32(body, pos, "user var length")
    data, pos = raw(body, pos, vlen, "user var value")
    flags = body[pos] if pos < len(body) else 0
    unsigned = bool(flags & 1)
    tname = _UV_TYPES.get(vtype)
    if tname is None:
        raise DecodeError(f"unknown user variable type {vtype}")
    value: object
    if tname == "STRING":
        value = data if charset == 63 else text(data)
    elif tname == "REAL":
        value = struct.unpack("<d", data)[0]
    elif tname == "INT":
        value = int.from_bytes(data, "little", signed=not unsigned)
    elif tname == "DECIMAL":
        precision, scale = data[0], data[1]
        value, _ = decode_decimal(data, 2, precision, scale)
    else:
        value = data
    if isinstance(value, Decimal):
        value = value
    return UserVarEvent(**base, name=text(name), value=value, value_type=tname, charset=charset,
                        unsigned=unsigned)


def decode_incident(body: bytes, base: EventBase) -> IncidentEvent:
    incident, pos = uint_n(body, 0, 2, "incident number")
    message = ""
    if pos < len(body):
        n, pos = uint_n(body, pos, 1, "incident message length")
        msg, pos = raw(body, pos, n, "incident message")
        message = text(msg)
    return IncidentEvent(**base, incident=incident, message=message)


def decode_heartbeat(body: bytes, base: EventBase) -> HeartbeatEvent:
    return HeartbeatEvent(**base, log_file=text(body), log_pos=base["header"].log_pos)


def decode_heartbeat_v2(body: bytes, base: EventBase) -> HeartbeatEvent:
    """MySQL 8.0.26+: TLV fields (1 = file name, 2 = position), 0 ends the header."""
    pos, log_file, log_pos = 0, "", base["header"].log_pos
    while pos < len(body):
        ftype, pos = packed_int(body, pos)
        if ftype == 0:
            break
        flen, pos = packed_int(body, pos)
        value, pos = raw(body, pos, flen, "heartbeat field")
        if ftype == 1:
            log_file = text(value)
        elif ftype == 2:
            log_pos, _ = packed_int(value, 0)
    return HeartbeatEvent(**base, log_file=log_file, log_pos=log_pos)


def decode_rows_query(body: bytes, base: EventBase) -> RowsQueryEvent:
    # One length byte (truncated at 255, so unreliable) precedes the full statement.
    return RowsQueryEvent(**base, query=text(body[1:]))


def decode_annotate_rows(body: bytes, base: EventBase) -> AnnotateRowsEvent:
    return AnnotateRowsEvent(**base, query=text(body))


def decode_binlog_checkpoint(body: bytes, base: EventBase) -> BinlogCheckpointEvent:
    n, pos = u32(body, 0, "checkpoint file name length")
    name, _ = raw(body, pos, n, "checkpoint file name")
    return BinlogCheckpointEvent(**base, binlog_file=text(name))


def decode_start_encryption(body: bytes, base: EventBase) -> StartEncryptionEvent:
    scheme, pos = uint_n(body, 0, 1, "encryption scheme")
    key_version, pos = u32(body, pos, "key version")
    nonce, _ = raw(body, pos, 12, "nonce")
    return StartEncryptionEvent(**base, scheme=scheme, key_version=key_version, nonce=nonce)


def decode_xa_prepare(body: bytes, base: EventBase) -> XaPrepareEvent:
    one_phase, pos = uint_n(body, 0, 1, "one phase flag")
    fmt, pos = u32(body, pos, "xid format")
    glen, pos = u32(body, pos, "gtrid length")
    blen, pos = u32(body, pos, "bqual length")
    if glen > 64 or blen > 64:
        raise DecodeError(f"XA id lengths {glen}/{blen} exceed 64")
    gtrid, pos = raw(body, pos, glen, "gtrid")
    bqual, pos = raw(body, pos, blen, "bqual")
    return XaPrepareEvent(**base, one_phase=bool(one_phase), format_id=fmt, gtrid=gtrid,
                          bqual=bqual)


def decode_opaque(type_code: int, body: bytes, base: EventBase) -> OpaqueEvent:
    """Events without row data whose bodies binlake passes on whole: LOAD DATA blocks of
    statement-based replication, group-replication context and view changes."""
    fields: dict[str, object] = {}
    if type_code in (E.APPEND_BLOCK, E.BEGIN_LOAD_QUERY, E.DELETE_FILE, E.EXEC_LOAD) and len(body) >= 4:
        fields["file_id"] = int.from_bytes(body[:4], "little")
    elif type_code == E.TRANSACTION_CONTEXT and len(body) >= 18:
        # post-header: uuid length 1, thread id 4, gtid specified 1, three 4-byte lengths
        fields["server_uuid"] = text(body[18:18 + body[0]])
        fields["thread_id"] = int.from_bytes(body[1:5], "little")
    elif type_code == E.VIEW_CHANGE and len(body) >= 48:
        fields["view_id"] = text(bytes(body[:40]).rstrip(b"\0"))
        fields["seq_number"] = int.from_bytes(body[40:48], "little")
    return OpaqueEvent(**base, body=bytes(body), fields=fields)
