"""Compressed binlog events: MariaDB's zlib events (165..171) and MySQL's TRANSACTION_PAYLOAD (40).

Sans-IO: bytes in, bytes out. Every malformed input raises DecodeError (TruncatedError when
it ends early); decompression output is always capped at the size the event declares, so a
hostile event cannot blow up memory.

MariaDB (``log_bin_compress=ON``)
---------------------------------
A compressed event is its uncompressed twin with one region replaced by a compressed record:
``header byte | original length (1..4 bytes, big-endian) | zlib stream``. The header byte is
``0x80 | algorithm << 4 | lenlen`` with algorithm 0 (zlib; bits 4..6) and lenlen 1..4
(bits 0..2). What is compressed:

* QUERY_COMPRESSED (165 -> QUERY 2): the query text, i.e. everything after
  ``post-header (13) | status vars | db name | NUL`` up to the CRC.
* *_ROWS_COMPRESSED_V1 (166..168 -> 23..25) and *_ROWS_COMPRESSED (169..171 -> 30..32,
  post-header 10 with the v2 extra-data block): the row images, i.e. everything after
  ``table id (6) | flags (2) | [extra-data block, v2 only] | column count (packed int) |
  columns-present bitmap | [after-image bitmap, UPDATE only]`` up to the CRC.

The on-disk CRC covers the compressed bytes: verify it before uncompressing. The events
returned here have the twin's type code, the new size, the original log_pos (still the
file position after the *compressed* event) and a fresh CRC when the event has one.

MySQL (``binlog_transaction_compression=ON``, 8.0.20+)
------------------------------------------------------
TRANSACTION_PAYLOAD has no post-header; its body is a list of
``type (packed int) | length (packed int) | value (packed int)`` fields ended by type 0:
1 = payload size, 2 = compression type (0 ZSTD, 255 NONE), 3 = uncompressed size (absent for
NONE: it defaults to the payload size). The payload follows. Once decompressed it is a plain
sequence of events with normal 19-byte headers, **without** CRCs and with log_pos 0
(checked against the corpus); the outer event's CRC covers the compressed payload.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import zstandard

from .._util.lenenc import read_lenenc
from ..errors import DecodeError, TruncatedError
from .constants import HEADER_LEN, EventType

__all__ = [
    "MARIADB_COMPRESSED_TWIN",
    "mariadb_uncompress",
    "mariadb_compress",
    "mariadb_compressed_header",
    "query_compressed_offset",
    "rows_compressed_offset",
    "uncompress_query_event",
    "uncompress_rows_event",
    "uncompress_mariadb_event",
    "TransactionPayload",
    "COMPRESSION_ZSTD",
    "COMPRESSION_NONE",
    "parse_transaction_payload",
    "decompress_payload",
    "iter_payload_events",
    "iter_transaction_events",
]

Buffer = bytes | bytearray | memoryview

# Compressed MariaDB type -> the uncompressed type the ordinary decoder knows.
MARIADB_COMPRESSED_TWIN: dict[int, int] = {
    EventType.MARIADB_QUERY_COMPRESSED: EventType.QUERY,
    EventType.MARIADB_WRITE_ROWS_COMPRESSED_V1: EventType.WRITE_ROWS_V1,
    EventType.MARIADB_UPDATE_ROWS_COMPRESSED_V1: EventType.UPDATE_ROWS_V1,
    EventType.MARIADB_DELETE_ROWS_COMPRESSED_V1: EventType.DELETE_ROWS_V1,
    EventType.MARIADB_WRITE_ROWS_COMPRESSED: EventType.WRITE_ROWS_V2,
    EventType.MARIADB_UPDATE_ROWS_COMPRESSED: EventType.UPDATE_ROWS_V2,
    EventType.MARIADB_DELETE_ROWS_COMPRESSED: EventType.DELETE_ROWS_V2,
}
_ROWS_V1_TYPES = frozenset({166, 167, 168})
_ROWS_V2_TYPES = frozenset({169, 170, 171})
_UPDATE_TYPES = frozenset({167, 170})

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

QUERY_POST_HEADER_MIN = 13  # thread id 4, exec time 4, db len 1, error code 2, status vars len 2
ROWS_HEADER_LEN_V1 = 8  # table id 6 + flags 2
ROWS_HEADER_LEN_V2 = 10  # ... + extra-data length 2


def _packed_int(buf: Buffer, pos: int, what: str) -> tuple[int, int]:
    """MySQL length-encoded integer (net_field_length); NULL (251) and 255 are invalid here."""
    def fail(kind: str, at: int, detail: int, left: int) -> Exception:
        if kind == "end":
            return TruncatedError(f"{what}: packed integer at offset {at} is past the end")
        if kind == "prefix":
            return DecodeError(f"{what}: invalid packed integer prefix 0x{detail:02x} at offset {at}")
        return TruncatedError(f"{what}: packed integer at offset {at} needs {detail + 1} bytes")

    value, end = read_lenenc(buf, pos, fail)
    if value is None:
        raise DecodeError(f"{what}: invalid packed integer prefix 0xfb at offset {pos}")
    return value, end


# --------------------------------------------------------------------------- MariaDB zlib


def mariadb_compressed_header(buf: Buffer) -> tuple[int, int]:
    """Return (declared uncompressed length, header size) of a MariaDB compressed record."""
    if len(buf) < 1:
        raise TruncatedError("compressed record is empty")
    first = buf[0]
    if first & 0xF8 != 0x80:
        algorithm = (first >> 4) & 0x07
        if first & 0x80 and algorithm:
            raise DecodeError(f"compressed record uses unknown algorithm {algorithm} (only zlib=0 exists)")
        raise DecodeError(f"bad compressed record header byte 0x{first:02x} (expected 0x81..0x84)")
    lenlen = first & 0x07
    if not 1 <= lenlen <= 4:
        raise DecodeError(f"bad compressed record header byte 0x{first:02x}: length takes {lenlen} bytes")
    if len(buf) < 1 + lenlen:
        raise TruncatedError(f"compressed record ends inside its {lenlen}-byte length")
    declared = int.from_bytes(buf[1:1 + lenlen], "big")
    if declared == 0:
        # MariaDB treats 0 as "not a compressed record" and refuses the event.
        raise DecodeError("compressed record declares an uncompressed length of 0")
    return declared, 1 + lenlen


def mariadb_uncompress(buf: Buffer) -> bytes:
    """Uncompress a MariaDB compressed record (header byte, big-endian length, zlib stream).

    The output is capped at the declared length: a stream that inflates to more, to less, or
    that is followed by extra bytes is a DecodeError.
    """
    declared, start = mariadb_compressed_header(buf)
    inflater = zlib.decompressobj()
    try:
        # One byte of headroom: if zlib fills it, the stream is longer than declared.
        out = inflater.decompress(buf[start:], declared + 1)
    except zlib.error as exc:
        raise DecodeError(f"compressed record: zlib error: {exc}") from None
    if len(out) > declared:
        raise DecodeError(f"compressed record inflates to more than the declared {declared} bytes")
    if not inflater.eof:
        raise TruncatedError(
            f"compressed record: zlib stream ends early ({len(out)} of {declared} bytes)"
        )
    if inflater.unused_data:
        raise DecodeError(f"compressed record has {len(inflater.unused_data)} bytes after the zlib stream")
    if len(out) != declared:
        raise DecodeError(f"compressed record inflates to {len(out)} bytes, declared {declared}")
    return out


def mariadb_compress(data: Buffer, level: int = 6) -> bytes:
    """Build a MariaDB compressed record (the inverse of :func:`mariadb_uncompress`)."""
    n = len(data)
    if not 0 < n <= 0xFFFFFFFF:
        raise ValueError(f"cannot compress {n} bytes into a MariaDB record")
    lenlen = (n.bit_length() + 7) // 8
    return bytes([0x80 | lenlen]) + n.to_bytes(lenlen, "big") + zlib.compress(bytes(data), level)


def _event_bounds(event: Buffer, checksum_len: int, expected: frozenset[int] | set[int]) -> tuple[int, int]:
    """Check the common header; return (type code, end of data before the CRC)."""
    if checksum_len not in (0, 4):
        raise ValueError(f"checksum_len must be 0 or 4, not {checksum_len}")
    if len(event) < HEADER_LEN:
        raise TruncatedError(f"event has {len(event)} bytes, shorter than a header")
    type_code = event[4]
    if type_code not in expected:
        raise DecodeError(f"event type {EventType.name_of(type_code)} is not expected here")
    (size,) = _U32.unpack_from(event, 9)
    if size != len(event):
        raise DecodeError(f"event length field says {size} bytes but {len(event)} were given",
                          event_type=EventType.name_of(type_code))
    end = size - checksum_len
    if end <= HEADER_LEN:
        raise TruncatedError("event has no body", event_type=EventType.name_of(type_code))
    return type_code, end


def query_compressed_offset(event: Buffer, *, post_header_len: int = 13, checksum_len: int = 4) -> int:
    """Offset in a QUERY_COMPRESSED event where the compressed query text starts."""
    _, end = _event_bounds(event, checksum_len, {EventType.MARIADB_QUERY_COMPRESSED})
    if post_header_len < QUERY_POST_HEADER_MIN:
        raise DecodeError(f"QUERY_COMPRESSED post-header of {post_header_len} bytes is too short",
                          event_type="MARIADB_QUERY_COMPRESSED")
    if end < HEADER_LEN + post_header_len:
        raise TruncatedError("QUERY_COMPRESSED ends inside its post-header", event_type="MARIADB_QUERY_COMPRESSED")
    db_len = event[HEADER_LEN + 8]
    status_len: int = _U16.unpack_from(event, HEADER_LEN + 11)[0]
    start = HEADER_LEN + post_header_len + status_len + db_len + 1
    if start >= end:
        raise TruncatedError("QUERY_COMPRESSED ends before its query text", event_type="MARIADB_QUERY_COMPRESSED")
    if event[start - 1] != 0:
        raise DecodeError("QUERY_COMPRESSED: the database name is not NUL-terminated",
                          event_type="MARIADB_QUERY_COMPRESSED")
    return start


def rows_compressed_offset(event: Buffer, *, post_header_len: int, checksum_len: int = 4) -> int:
    """Offset in a compressed rows event where the compressed row images start."""
    type_code, end = _event_bounds(event, checksum_len, _ROWS_V1_TYPES | _ROWS_V2_TYPES)
    name = EventType.name_of(type_code)
    want = ROWS_HEADER_LEN_V2 if type_code in _ROWS_V2_TYPES else ROWS_HEADER_LEN_V1
    if post_header_len != want:
        raise DecodeError(f"{name} with a post-header of {post_header_len} bytes (expected {want})",
                          event_type=name)
    pos = HEADER_LEN + ROWS_HEADER_LEN_V1
    if type_code in _ROWS_V2_TYPES:
        if pos + 2 > end:
            raise TruncatedError("rows event ends inside its extra-data length", event_type=name)
        (extra_len,) = _U16.unpack_from(event, pos)
        if extra_len < 2:
            raise DecodeError(f"rows event extra-data length {extra_len} is below 2", event_type=name)
        pos += extra_len
    if pos >= end:
        raise TruncatedError("rows event ends before its column count", event_type=name)
    try:
        width, pos = _packed_int(event, pos, "column count")
    except DecodeError as exc:
        raise DecodeError(exc.reason, event_type=name) from None
    bitmap = (width + 7) // 8
    pos += bitmap * (2 if type_code in _UPDATE_TYPES else 1)
    if pos >= end:
        raise TruncatedError("rows event ends before its row data", event_type=name)
    return pos


def _rebuild(event: Buffer, start: int, end: int, twin: int, checksum_len: int, name: str) -> bytes:
    try:
        body = mariadb_uncompress(event[start:end])
    except DecodeError as exc:
        raise type(exc)(exc.reason, event_type=name) from None
    size = start + len(body) + checksum_len
    if size > 0xFFFFFFFF:
        raise DecodeError(f"uncompressed event would have {size} bytes", event_type=name)
    out = bytearray(size)
    out[:start] = event[:start]
    out[start:start + len(body)] = body
    out[4] = twin
    _U32.pack_into(out, 9, size)
    if checksum_len:
        _U32.pack_into(out, size - 4, zlib.crc32(memoryview(out)[:size - 4]))
    return bytes(out)


def uncompress_query_event(event: Buffer, *, post_header_len: int = 13, checksum_len: int = 4) -> bytes:
    """QUERY_COMPRESSED (165) -> an equivalent QUERY (2) event, CRC recomputed if present."""
    start = query_compressed_offset(event, post_header_len=post_header_len, checksum_len=checksum_len)
    return _rebuild(event, start, len(event) - checksum_len, EventType.QUERY, checksum_len,
                    "MARIADB_QUERY_COMPRESSED")


def uncompress_rows_event(event: Buffer, *, post_header_len: int, checksum_len: int = 4) -> bytes:
    """Compressed rows event (166..171) -> its uncompressed twin (23..25 or 30..32)."""
    start = rows_compressed_offset(event, post_header_len=post_header_len, checksum_len=checksum_len)
    type_code = event[4]
    return _rebuild(event, start, len(event) - checksum_len, MARIADB_COMPRESSED_TWIN[type_code],
                    checksum_len, EventType.name_of(type_code))


def uncompress_mariadb_event(event: Buffer, *, post_header_len: int, checksum_len: int = 4) -> bytes:
    """Any MariaDB compressed event (165..171) -> its uncompressed twin.

    ``post_header_len`` is the FDE's post-header length for this event's type code.
    """
    if len(event) < HEADER_LEN:
        raise TruncatedError(f"event has {len(event)} bytes, shorter than a header")
    if event[4] == EventType.MARIADB_QUERY_COMPRESSED:
        return uncompress_query_event(event, post_header_len=post_header_len, checksum_len=checksum_len)
    return uncompress_rows_event(event, post_header_len=post_header_len, checksum_len=checksum_len)


# --------------------------------------------------------------------------- MySQL payload

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
_COMPRESSION_NAMES = {COMPRESSION_ZSTD: "ZSTD", COMPRESSION_NONE: "NONE"}
_FIELD_END, _FIELD_PAYLOAD_SIZE, _FIELD_COMPRESSION, _FIELD_UNCOMPRESSED_SIZE = 0, 1, 2, 3
_CHUNK = 1 << 20
_TP = "TRANSACTION_PAYLOAD"


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    """A parsed TRANSACTION_PAYLOAD body; ``payload`` is a view into the caller's buffer."""

    compression: str  # "ZSTD" or "NONE"
    uncompressed_size: int
    payload: memoryview
    header_len: int = 0  # bytes of TLV fields before the payload

    @property
    def compression_code(self) -> int:
        return COMPRESSION_ZSTD if self.compression == "ZSTD" else COMPRESSION_NONE


def parse_transaction_payload(body: Buffer) -> TransactionPayload:
    """Parse a TRANSACTION_PAYLOAD body (after the 19-byte header, without the CRC)."""
    view = _byte_view(body)
    fields: dict[int, int] = {}
    pos = 0
    while True:
        if pos >= len(view):
            raise TruncatedError("payload header has no end mark", event_type=_TP)
        field, pos = _packed_int(view, pos, "payload field type")
        if field == _FIELD_END:
            break
        length, pos = _packed_int(view, pos, "payload field length")
        if field in fields:
            raise DecodeError(f"payload field {field} appears twice", event_type=_TP)
        if field in (_FIELD_PAYLOAD_SIZE, _FIELD_COMPRESSION, _FIELD_UNCOMPRESSED_SIZE):
            value_start = pos
            value, pos = _packed_int(view, pos, f"payload field {field}")
            if pos - value_start != length:
                raise DecodeError(f"payload field {field} says {length} bytes but its value takes "
                                  f"{pos - value_start}", event_type=_TP)
            fields[field] = value
        else:  # unknown fields are skipped, as MySQL does
            if pos + length > len(view):
                raise TruncatedError(f"payload field {field} of {length} bytes runs past the end", event_type=_TP)
            fields[field] = -1
            pos += length
    if _FIELD_PAYLOAD_SIZE not in fields:
        raise DecodeError("payload header lacks the payload size", event_type=_TP)
    if _FIELD_COMPRESSION not in fields:
        raise DecodeError("payload header lacks the compression type", event_type=_TP)
    code = fields[_FIELD_COMPRESSION]
    if code not in _COMPRESSION_NAMES:
        raise DecodeError(f"unknown payload compression type {code} (0=ZSTD, 255=NONE)", event_type=_TP)
    size = fields[_FIELD_PAYLOAD_SIZE]
    remaining = len(view) - pos
    if size > remaining:
        raise TruncatedError(f"payload size {size} exceeds the {remaining} bytes left", event_type=_TP)
    if size < remaining:
        raise DecodeError(f"{remaining - size} bytes follow the {size}-byte payload "
                          "(was the CRC left on the body?)", event_type=_TP)
    uncompressed = fields.get(_FIELD_UNCOMPRESSED_SIZE) or size  # MySQL's default
    if code == COMPRESSION_NONE and uncompressed != size:
        raise DecodeError(f"uncompressed payload of {size} bytes declares {uncompressed}", event_type=_TP)
    return TransactionPayload(_COMPRESSION_NAMES[code], uncompressed, view[pos:], pos)


def _payload_chunks(tp: TransactionPayload, chunk: int = _CHUNK) -> Iterator[bytes]:
    """Yield the decompressed payload in pieces, never more than the declared size in all."""
    limit = tp.uncompressed_size
    if tp.compression == "NONE":
        for start in range(0, len(tp.payload), chunk):
            yield bytes(tp.payload[start:start + chunk])
        return
    reader = zstandard.ZstdDecompressor().stream_reader(tp.payload, read_across_frames=True)
    total = 0
    try:
        while True:
            piece = reader.read(min(chunk, limit + 1 - total))
            if not piece:
                break
            total += len(piece)
            if total > limit:
                raise DecodeError(f"zstd payload inflates past its declared {limit} bytes", event_type=_TP)
            yield piece
    except zstandard.ZstdError as exc:
        raise DecodeError(f"zstd payload: {exc}", event_type=_TP) from None
    if total != tp.uncompressed_size:
        raise DecodeError(f"zstd payload inflates to {total} bytes, declared {tp.uncompressed_size}",
                          event_type=_TP)


def decompress_payload(tp: TransactionPayload, *, max_size: int | None = None) -> bytes:
    """The payload's inner event stream; output is capped at the declared size (and max_size)."""
    if max_size is not None and tp.uncompressed_size > max_size:
        raise DecodeError(f"payload declares {tp.uncompressed_size} bytes, over the limit of {max_size}",
                          event_type=_TP)
    return b"".join(_payload_chunks(tp))


def _byte_view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _check_inner_header(buf: Buffer, pos: int, remaining: int) -> int:
    """The inner event's size, checked against what is left of the payload."""
    size: int = _U32.unpack_from(buf, pos + 9)[0]
    if size < HEADER_LEN:
        raise DecodeError(f"inner event at payload offset {pos} has length {size}", event_type=_TP)
    if size > remaining:
        raise TruncatedError(f"inner event at payload offset {pos} of {size} bytes runs past the payload "
                             f"({remaining} left)", event_type=_TP)
    return size


def iter_payload_events(payload: Buffer) -> Iterator[tuple[int, memoryview]]:
    """Yield (offset in payload, event bytes) for the inner events (no CRCs inside)."""
    view = _byte_view(payload)
    pos, n = 0, len(view)
    while pos < n:
        if n - pos < HEADER_LEN:
            raise TruncatedError(f"payload ends inside an event header at offset {pos}", event_type=_TP)
        size = _check_inner_header(view, pos, n - pos)
        yield pos, view[pos:pos + size]
        pos += size


def iter_transaction_events(tp: TransactionPayload, *, max_size: int | None = None,
                            chunk: int = _CHUNK) -> Iterator[tuple[int, bytes]]:
    """Like iter_payload_events on decompress_payload(tp), but streaming: memory stays about
    one chunk plus the largest inner event, however big the transaction."""
    if max_size is not None and tp.uncompressed_size > max_size:
        raise DecodeError(f"payload declares {tp.uncompressed_size} bytes, over the limit of {max_size}",
                          event_type=_TP)
    buf = bytearray()
    base = 0  # payload offset of buf[0]
    for piece in _payload_chunks(tp, chunk):
        buf += piece
        pos = 0
        while len(buf) - pos >= HEADER_LEN:
            (size,) = _U32.unpack_from(buf, pos + 9)
            if size < HEADER_LEN:
                raise DecodeError(f"inner event at payload offset {base + pos} has length {size}", event_type=_TP)
            if base + pos + size > tp.uncompressed_size:
                raise TruncatedError(f"inner event at payload offset {base + pos} of {size} bytes runs past "
                                     "the payload", event_type=_TP)
            if len(buf) - pos < size:
                break
            yield base + pos, bytes(buf[pos:pos + size])
            pos += size
        del buf[:pos]
        base += pos
    if buf:
        raise TruncatedError(f"payload ends inside an event at offset {base}", event_type=_TP)
