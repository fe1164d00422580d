"""Little readers for binlog wire encodings, on bytes or memoryviews (no copies).

Every reader takes (buf, pos) and returns (value, new_pos); a short buffer raises
DecodeError, so callers never see IndexError or struct.error from here.
"""
from __future__ import annotations

import struct

from .._util.lenenc import read_lenenc
from ..errors import DecodeError

Buffer = bytes | bytearray | memoryview

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")


def need(buf: Buffer, pos: int, n: int, what: str) -> None:
    """Raise TruncatedError unless n bytes are available at pos."""
    if n < 0 or pos + n > len(buf):
        raise DecodeError(f"{what}: needs {n} bytes at body offset {pos}, {len(buf) - pos} left",
                          hint="the event is malformed or corrupt")


def packed_int(buf: Buffer, pos: int) -> tuple[int, int]:
    """MySQL length-encoded integer (net_field_length); 251 (NULL) is an error here."""
    value, end = read_lenenc(buf, pos, _packed_error)
    if value is None:
        raise DecodeError(f"invalid packed integer prefix 0xfb at body offset {pos}")
    return value, end


def _packed_error(kind: str, pos: int, detail: int, left: int) -> DecodeError:
    if kind == "end":
        return DecodeError(f"packed integer at body offset {pos} is past the end",
                           hint="the event is malformed or corrupt")
    if kind == "prefix":
        return DecodeError(f"invalid packed integer prefix 0x{detail:02x} at body offset {pos}")
    return DecodeError(f"packed integer: needs {detail} bytes at body offset {pos + 1}, "
                       f"{left - 1} left", hint="the event is malformed or corrupt")


def u8(buf: Buffer, pos: int, what: str = "byte") -> tuple[int, int]:
    need(buf, pos, 1, what)
    return buf[pos], pos + 1


def u16(buf: Buffer, pos: int, what: str = "uint16") -> tuple[int, int]:
    need(buf, pos, 2, what)
    return U16.unpack_from(buf, pos)[0], pos + 2


def u32(buf: Buffer, pos: int, what: str = "uint32") -> tuple[int, int]:
    need(buf, pos, 4, what)
    return U32.unpack_from(buf, pos)[0], pos + 4


def u64(buf: Buffer, pos: int, what: str = "uint64") -> tuple[int, int]:
    need(buf, pos, 8, what)
    return U64.unpack_from(buf, pos)[0], pos + 8


def uint_n(buf: Buffer, pos: int, n: int, what: str = "integer") -> tuple[int, int]:
    need(buf, pos, n, what)
    return int.from_bytes(buf[pos:pos + n], "little"), pos + n


def raw(buf: Buffer, pos: int, n: int, what: str = "bytes") -> tuple[bytes, int]:
    need(buf, pos, n, what)
    return bytes(buf[pos:pos + n]), pos + n


def text(data: Buffer, encoding: str = "utf-8") -> str:
    """Server-side identifiers and statements: UTF-8, but never fail on odd bytes."""
    return bytes(data).decode(encoding, errors="surrogateescape")


def packed_bytes(buf: Buffer, pos: int, what: str = "string") -> tuple[bytes, int]:
    n, pos = packed_int(buf, pos)
    return raw(buf, pos, n, what)


def _bitmap_size(data: Buffer, count: int) -> None:
    if len(data) * 8 < count:
        raise DecodeError(f"bitmap of {len(data)} bytes cannot hold {count} bits",
                          hint="the event is malformed or corrupt")


def bitmap_bits(data: Buffer, count: int) -> list[bool]:
    """LSB-first bitmap (rows-event column and null bitmaps)."""
    _bitmap_size(data, count)
    return [bool(data[i >> 3] & (1 << (i & 7))) for i in range(count)]


def bitmap_bits_msb(data: Buffer, count: int) -> list[bool]:
    """MSB-first bitmap (TABLE_MAP optional metadata: signedness, visibility)."""
    _bitmap_size(data, count)
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]
