"""Decoders for the GTID family of event bodies (MySQL 33/34/35/42, MariaDB 162/163).

``body`` is the event after the 19-byte header, without the CRC32. Every malformed body,
short ones included, raises DecodeError (like binlake.binlog.wire: TruncatedError is kept for
a file or stream that ends inside an event, which the core detects); never IndexError etc.

MySQL 8.3+ GTID_TAGGED (42) is not a fixed layout: it is one ``mysql::serialization``
message (libs/mysql/serialization in the server):

    message  := varint(format_version = 1) varint(message_size) varint(last_non_ignorable_id)
                { varint(field_id) field_data }           -- ids ascending, absent = default
    varint   := 1..9 bytes LE; the number of trailing 1-bits of the first byte + 1 is the
                byte count; the value follows those bits (9 bytes: the 8 bytes after the first)
    signed   := zigzag on top of varint ((x << 1) ^ sign)
    string   := varint(length) bytes;  fixed array := each element on its own

``message_size`` counts from the format-version byte to the end of the message.
Gtid_event's fields, by id: 0 gtid_flags (u8), 1 uuid (16 x varint byte), 2 gno (i64),
3 tag (string <= 32), 4 last_committed (i64), 5 sequence_number (i64),
6 immediate_commit_timestamp (u64), 7 original_commit_timestamp (u64, absent = 6),
8 transaction_length (u64), 9 immediate_server_version (u32),
10 original_server_version (u32, absent = 9), 11 commit_group_ticket (u64).
"""
from __future__ import annotations

from typing import TypedDict

from ..events import (
    EventBase, GtidEvent, MariaGtidEvent, MariaGtidListEvent, PreviousGtidsEvent,
)
from ..wire import Buffer, packed_int, raw, u8, u32, u64, uint_n
from ...errors import DecodeError
from ...cdc.xa import xid_text
from ...gtid.encoding import read_varlen_signed, read_varlen_unsigned
from ...gtid.sets import decode_gtid_set_encoding

__all__ = [
    "decode_gtid",
    "decode_gtid_tagged",
    "decode_maria_gtid",
    "decode_maria_gtid_list",
    "decode_previous_gtids",
]

_GNO_MAX = (1 << 63) - 2
_LOGICAL_TIMESTAMP_TYPECODE = 2
_TS_FLAG = 1 << 55  # in the 7-byte immediate_commit_timestamp: original follows
_VERSION_FLAG = 1 << 31  # in immediate_server_version: original follows
_SERIALIZATION_FORMAT_VERSION = 1
_TAG_MAX_LEN = 32
_MALFORMED = "the event is malformed or corrupt"


def _malformed(message: str) -> DecodeError:
    return DecodeError(message, hint=_MALFORMED)


# ---------------------------------------------------------------------------- MySQL

def _uuid_text(b: Buffer) -> str:
    h = bytes(b).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _GtidClock(TypedDict, total=False):
    """The optional fields of a GTID event, each present when its bytes are."""

    last_committed: int
    sequence_number: int
    immediate_commit_timestamp: int
    original_commit_timestamp: int
    transaction_length: int
    immediate_server_version: int
    original_server_version: int


def decode_gtid(body: memoryview, base: EventBase) -> GtidEvent:
    """GTID (33) and ANONYMOUS_GTID (34), all layouts from 5.6 to 9.x.

    5.6 stops after the GNO; 5.7 adds the logical clock; 8.0 adds commit timestamps, the
    transaction length, server versions and (8.0.21+) a commit group ticket. Each extension
    is read only when the bytes are there, as the server does.
    """
    anonymous = base["header"].type_code == 34
    flags, pos = u8(body, 0, "GTID flags")
    sid, pos = raw(body, pos, 16, "GTID uuid")
    gno_u, pos = u64(body, pos, "GTID gno")
    gno = gno_u - (1 << 64) if gno_u >= (1 << 63) else gno_u
    if anonymous:
        if gno != 0:
            raise DecodeError(f"ANONYMOUS_GTID with GNO {gno} (must be 0)")
    elif not 1 <= gno <= _GNO_MAX:
        raise DecodeError(f"GTID with invalid GNO {gno}")
    fields: _GtidClock = {}
    n = len(body)
    if pos < n:
        lt_type, pos = u8(body, pos, "GTID logical clock type")
        # 5.7.4 and older used another type code with shorter fields: ignored, like the server.
        if lt_type == _LOGICAL_TIMESTAMP_TYPECODE:
            fields["last_committed"], pos = u64(body, pos, "GTID last_committed")
            fields["sequence_number"], pos = u64(body, pos, "GTID sequence_number")
            if n - pos >= 7:
                imm, pos = uint_n(body, pos, 7, "GTID immediate_commit_timestamp")
                if imm & _TS_FLAG:
                    imm &= ~_TS_FLAG
                    orig, pos = uint_n(body, pos, 7, "GTID original_commit_timestamp")
                else:
                    orig = imm
                fields["immediate_commit_timestamp"] = imm
                fields["original_commit_timestamp"] = orig
                if pos < n:
                    fields["transaction_length"], pos = packed_int(body, pos)
                if n - pos >= 4:
                    iv, pos = u32(body, pos, "GTID immediate_server_version")
                    if iv & _VERSION_FLAG:
                        iv &= ~_VERSION_FLAG
                        ov, pos = u32(body, pos, "GTID original_server_version")
                    else:
                        ov = iv
                    fields["immediate_server_version"] = iv
                    fields["original_server_version"] = ov
                    # commit_group_ticket (8 bytes) may follow; GtidEvent does not keep it.
    return GtidEvent(**base, uuid=None if anonymous else _uuid_text(sid), gno=gno, tag=None,
                     flags=flags, anonymous=anonymous, **fields)


# (field id, name, kind): kind "u8"/"u32"/"u64" unsigned, "i64" signed, "uuid", "tag"
_TAGGED_FIELDS: tuple[tuple[int, str, str], ...] = (
    (0, "flags", "u8"),
    (1, "uuid", "uuid"),
    (2, "gno", "i64"),
    (3, "tag", "tag"),
    (4, "last_committed", "i64"),
    (5, "sequence_number", "i64"),
    (6, "immediate_commit_timestamp", "u64"),
    (7, "original_commit_timestamp", "u64"),
    (8, "transaction_length", "u64"),
    (9, "immediate_server_version", "u32"),
    (10, "original_server_version", "u32"),
    (11, "commit_group_ticket", "u64"),
)
_LAST_KNOWN_FIELD_ID = 11


def _read_tagged_field(body: Buffer, pos: int, end: int, name: str, kind: str) -> tuple[object, int]:
    view = body[:end]  # a field must not run past the message
    what = f"GTID_TAGGED {name}"
    if kind == "u8":
        return read_varlen_unsigned(view, pos, what, 0xFF)
    if kind == "u32":
        return read_varlen_unsigned(view, pos, what, 0xFFFFFFFF)
    if kind == "u64":
        return read_varlen_unsigned(view, pos, what)
    if kind == "i64":
        return read_varlen_signed(view, pos, what)
    if kind == "uuid":
        out = bytearray()
        for _ in range(16):
            b, pos = read_varlen_unsigned(view, pos, what, 0xFF)
            out.append(b)
        return _uuid_text(out), pos
    # tag: string bounded to 32 chars: [a-zA-Z_][a-zA-Z0-9_]*, stored lowercase by the server
    length, pos = read_varlen_unsigned(view, pos, f"{what} length")
    if length > _TAG_MAX_LEN:
        raise DecodeError(f"{what}: length {length} exceeds {_TAG_MAX_LEN}")
    data, pos = raw(view, pos, length, what)
    try:
        tag = data.decode("ascii")
    except UnicodeDecodeError:
        raise DecodeError(f"{what}: {data!r} is not ASCII") from None
    if tag and not (tag[0].isalpha() or tag[0] == "_") or not all(c.isalnum() or c == "_" for c in tag):
        raise DecodeError(f"{what}: invalid tag {tag!r}")
    return tag.lower(), pos


def decode_gtid_tagged(body: memoryview, base: EventBase) -> GtidEvent:
    """GTID_TAGGED (42), MySQL 8.3+: a mysql::serialization message (see the module doc).

    Fields missing from the message take the server's defaults; unknown trailing fields are
    skipped unless the message marks them non-ignorable (then the event is refused).
    """
    version, pos = read_varlen_unsigned(body, 0, "GTID_TAGGED format version")
    if version != _SERIALIZATION_FORMAT_VERSION:
        raise DecodeError(f"GTID_TAGGED: unsupported serialization format version {version}")
    size, pos = read_varlen_unsigned(body, pos, "GTID_TAGGED message size")
    if size > len(body):
        raise _malformed(f"GTID_TAGGED: message size {size} exceeds the {len(body)}-byte body")
    end = size
    if end < pos:
        raise DecodeError(f"GTID_TAGGED: message size {size} is smaller than its own header")
    last_needed, pos = read_varlen_unsigned(body[:end], pos, "GTID_TAGGED last non-ignorable field id")
    if last_needed > _LAST_KNOWN_FIELD_ID + 1:
        raise DecodeError(
            f"GTID_TAGGED: field {last_needed - 1} is required but unknown to this decoder",
            hint="the event comes from a newer MySQL; upgrade binlake")
    values: dict[str, object] = {}
    for field_id, name, kind in _TAGGED_FIELDS:
        if pos >= end:
            break
        peek, after_id = read_varlen_unsigned(body[:end], pos, "GTID_TAGGED field id")
        if peek != field_id:
            continue  # absent: default below; a later id may still match
        values[name], pos = _read_tagged_field(body, after_id, end, name, kind)
    # Anything between pos and end is a field from a newer server, ignorable by the check above.
    gno = values.get("gno", 0)
    if not isinstance(gno, int) or not 1 <= gno <= _GNO_MAX:
        raise DecodeError(f"GTID_TAGGED with invalid GNO {gno}")
    imm = values.get("immediate_commit_timestamp", 0)
    isv = values.get("immediate_server_version", 0)
    return GtidEvent(
        **base,
        uuid=values.get("uuid", "00000000-0000-0000-0000-000000000000"),  # type: ignore[arg-type]
        gno=gno,
        tag=values.get("tag") or None,  # type: ignore[arg-type]
        flags=values.get("flags", 0),  # type: ignore[arg-type]
        last_committed=values.get("last_committed", 0),  # type: ignore[arg-type]
        sequence_number=values.get("sequence_number", 0),  # type: ignore[arg-type]
        immediate_commit_timestamp=imm,  # type: ignore[arg-type]
        original_commit_timestamp=values.get("original_commit_timestamp", imm),  # type: ignore[arg-type]
        transaction_length=values.get("transaction_length", 0),  # type: ignore[arg-type]
        immediate_server_version=isv,  # type: ignore[arg-type]
        original_server_version=values.get("original_server_version", isv),  # type: ignore[arg-type]
        anonymous=False,
    )


def decode_previous_gtids(body: memoryview, base: EventBase) -> PreviousGtidsEvent:
    """PREVIOUS_GTIDS (35): an encoded GTID set, untagged or (8.3+) tagged layout."""
    if len(body) < 8:
        raise _malformed(f"PREVIOUS_GTIDS body of {len(body)} bytes is shorter than 8")
    gtid_set = decode_gtid_set_encoding(body, what="PREVIOUS_GTIDS")
    return PreviousGtidsEvent(**base, gtid_set=str(gtid_set))


# ---------------------------------------------------------------------------- MariaDB

_FL_GROUP_COMMIT_ID = 0x02
_FL_PREPARED_XA = 0x40
_FL_COMPLETED_XA = 0x80
_FL_EXTRA_MULTI_ENGINE = 0x01
_FL_COMMIT_ALTER = 0x04
_FL_ROLLBACK_ALTER = 0x08
_FL_EXTRA_THREAD_ID = 0x10
_MARIA_GTID_POST_HEADER = 19
_XID_MAX_PART = 64


def decode_maria_gtid(body: memoryview, base: EventBase) -> MariaGtidEvent:
    """MARIADB_GTID (162): seq_no 8, domain 4, flags 1, then optional parts by flag.

    commit_id (8) if FL_GROUP_COMMIT_ID; XID if FL_PREPARED_XA|FL_COMPLETED_XA; then, when
    bytes remain, flags_extra (1) with: extra engine count (1) if MULTI_ENGINE, start-alter
    seq_no (8) if COMMIT/ROLLBACK_ALTER, thread_id (4) if THREAD_ID (11.5+). Short events
    are zero-padded to 19 bytes, so a padding byte reads as flags_extra 0.
    """
    if len(body) < _MARIA_GTID_POST_HEADER:
        raise _malformed(f"MARIADB_GTID body of {len(body)} bytes is shorter than 19")
    seq_no, pos = u64(body, 0, "MariaDB GTID seq_no")
    domain_id, pos = u32(body, pos, "MariaDB GTID domain_id")
    flags, pos = u8(body, pos, "MariaDB GTID flags")
    commit_id = xid = flags_extra = None
    extra: dict[str, int] = {}
    if flags & _FL_GROUP_COMMIT_ID:
        commit_id, pos = u64(body, pos, "MariaDB GTID commit_id")
    if flags & (_FL_PREPARED_XA | _FL_COMPLETED_XA):
        format_id, pos = u32(body, pos, "MariaDB GTID XID format_id")
        gtrid_len, pos = u8(body, pos, "MariaDB GTID XID gtrid_length")
        bqual_len, pos = u8(body, pos, "MariaDB GTID XID bqual_length")
        if gtrid_len > _XID_MAX_PART or bqual_len > _XID_MAX_PART:
            raise DecodeError(
                f"MariaDB GTID XID lengths {gtrid_len}/{bqual_len} exceed {_XID_MAX_PART}")
        gtrid, pos = raw(body, pos, gtrid_len, "MariaDB GTID XID gtrid")
        bqual, pos = raw(body, pos, bqual_len, "MariaDB GTID XID bqual")
        xid = xid_text(format_id, gtrid, bqual)  # as mariadb-binlog prints it
    if pos < len(body):
        flags_extra, pos = u8(body, pos, "MariaDB GTID flags_extra")
        if flags_extra & _FL_EXTRA_MULTI_ENGINE:
            extra["extra_engines"], pos = u8(body, pos, "MariaDB GTID extra_engines")
        if flags_extra & (_FL_COMMIT_ALTER | _FL_ROLLBACK_ALTER):
            extra["sa_seq_no"], pos = u64(body, pos, "MariaDB GTID start-alter seq_no")
        if flags_extra & _FL_EXTRA_THREAD_ID:
            extra["thread_id"], pos = u32(body, pos, "MariaDB GTID thread_id")
    # Remaining bytes are zero padding up to the 19-byte post-header.
    return MariaGtidEvent(**base, domain_id=domain_id, server_id=base["header"].server_id,
                          seq_no=seq_no, flags=flags, commit_id=commit_id, xid=xid,
                          flags_extra=flags_extra, **extra)


def decode_maria_gtid_list(body: memoryview, base: EventBase) -> MariaGtidListEvent:
    """MARIADB_GTID_LIST (163): count (low 28 bits) + flags (high 4), then 16-byte GTIDs."""
    word, pos = u32(body, 0, "MariaDB GTID_LIST count")
    count = word & ((1 << 28) - 1)
    flags = word >> 28
    if count * 16 > len(body) - pos:
        raise _malformed(
            f"MariaDB GTID_LIST of {count} GTIDs needs {count * 16} bytes, {len(body) - pos} left")
    gtids: list[tuple[int, int, int]] = []
    for _ in range(count):
        d, pos = u32(body, pos, "GTID_LIST domain_id")
        s, pos = u32(body, pos, "GTID_LIST server_id")
        q, pos = u64(body, pos, "GTID_LIST seq_no")
        gtids.append((d, s, q))
    return MariaGtidListEvent(**base, gtids=gtids, flags=flags)
