"""The mysql::serialization varint (MySQL 8.3+): GTID_TAGGED event fields and the tags in
encoded GTID sets.

    varint := 1..9 bytes LE; the number of trailing 1-bits of the first byte + 1 is the
              byte count; the value follows those bits (9 bytes: the 8 bytes after the first)
    signed := zigzag on top of varint ((x << 1) ^ sign)

Malformed input raises DecodeError with the offset; never IndexError.
"""
from __future__ import annotations

from ..binlog.wire import Buffer, need
from ..errors import DecodeError

__all__ = ["read_varlen_signed", "read_varlen_unsigned", "write_varlen_signed",
           "write_varlen_unsigned"]

_MALFORMED = "the event is malformed or corrupt"


def _malformed(message: str) -> DecodeError:
    return DecodeError(message, hint=_MALFORMED)


def read_varlen_unsigned(buf: Buffer, pos: int, what: str = "varint",
                         max_value: int = (1 << 64) - 1) -> tuple[int, int]:
    """A mysql::serialization unsigned varint at pos -> (value, new_pos)."""
    if pos >= len(buf):
        raise _malformed(f"{what}: varint at body offset {pos} is past the end")
    first = buf[pos]
    n = 1
    while n < 9 and first & (1 << (n - 1)):
        n += 1
    need(buf, pos, n, what)
    if n == 1:
        value = first >> 1
    else:
        rest = int.from_bytes(buf[pos + 1:pos + n], "little")
        shift = 0 if n >= 8 else 8 - n
        value = ((first >> n) if n < 8 else 0) | (rest << shift)
    if value > max_value:
        raise DecodeError(f"{what}: value {value} at body offset {pos} exceeds {max_value}")
    return value, pos + n


def read_varlen_signed(buf: Buffer, pos: int, what: str = "varint",
                       bits: int = 64) -> tuple[int, int]:
    """A zigzag-encoded signed varint -> (value, new_pos)."""
    u, pos = read_varlen_unsigned(buf, pos, what, (1 << bits) - 1)
    return (u >> 1) ^ -(u & 1), pos


def write_varlen_unsigned(value: int) -> bytes:
    """Encode like the server does (shortest form); used for tags in encoded GTID sets."""
    if not 0 <= value < (1 << 64):
        raise ValueError(f"varint out of range: {value}")
    bits = value.bit_length()
    n = ((bits * 575) >> 12) + 1  # 1 + ceil((bits-1)/7), 9 for 64 bits (server's formula)
    if n == 1:
        return bytes([(value << 1) & 0xFF])
    if n == 9:
        return b"\xff" + value.to_bytes(8, "little")
    first = ((1 << (n - 1)) - 1) | ((value << n) & 0xFF)
    rest = value >> (8 - n)
    return bytes([first]) + rest.to_bytes(n - 1, "little")


def write_varlen_signed(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"signed varint out of range: {value}")
    return write_varlen_unsigned(((value << 1) ^ (value >> 63)) & ((1 << 64) - 1))
