"""Basic encodings of the client/server protocol: fixed little-endian ints, length-encoded
ints/strings and NUL-terminated strings.

Readers work on bytes, bytearray or memoryview without copying until a value is produced; a short
or malformed buffer raises ProtocolError (never IndexError/struct.error) so that callers can report
"the peer broke the protocol" instead of crashing.
"""
from __future__ import annotations

import struct

from .._util.lenenc import read_lenenc
from ..errors import ProtocolError

Buffer = bytes | bytearray | memoryview

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

#: Length-encoded prefix bytes.
LENENC_NULL = 0xFB
LENENC_2 = 0xFC
LENENC_3 = 0xFD
LENENC_8 = 0xFE


# ---------------------------------------------------------------------------------------------
# writers


def int1(value: int) -> bytes:
    return bytes((value & 0xFF,))


def int2(value: int) -> bytes:
    return _U16.pack(value & 0xFFFF)


def int3(value: int) -> bytes:
    return (value & 0xFFFFFF).to_bytes(3, "little")


def int4(value: int) -> bytes:
    return _U32.pack(value & 0xFFFFFFFF)


def int8(value: int) -> bytes:
    return _U64.pack(value & 0xFFFFFFFFFFFFFFFF)


def lenenc_int(value: int) -> bytes:
    """Encode an unsigned int in the 1/3/4/9-byte length-encoded form."""
    if value < 0:
        raise ValueError(f"length-encoded integers are unsigned, got {value}")
    if value < 0xFB:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + _U16.pack(value)
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    if value < 1 << 64:
        return b"\xfe" + _U64.pack(value)
    raise ValueError(f"{value} does not fit a length-encoded integer")


def lenenc_bytes(value: bytes | bytearray | memoryview) -> bytes:
    return lenenc_int(len(value)) + bytes(value)


def lenenc_str(value: str) -> bytes:
    return lenenc_bytes(value.encode("utf-8"))


def nul_bytes(value: bytes) -> bytes:
    if b"\x00" in value:
        raise ValueError("a NUL-terminated string cannot contain NUL")
    return value + b"\x00"


def nul_str(value: str) -> bytes:
    return nul_bytes(value.encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# readers


def read_lenenc_int(buf: Buffer, pos: int) -> tuple[int | None, int]:
    """Read a length-encoded int at pos; returns (None, pos+1) for the NULL marker 0xFB."""
    return read_lenenc(buf, pos, _lenenc_error)


def _lenenc_error(kind: str, pos: int, detail: int, left: int) -> ProtocolError:
    if kind == "end":
        return ProtocolError(f"length-encoded integer at offset {pos} is past the end")
    if kind == "prefix":
        return ProtocolError(f"invalid length-encoded integer prefix 0xff at offset {pos}")
    return ProtocolError(f"length-encoded integer at offset {pos} is cut short")


class Reader:
    """A cursor over one packet payload; every read checks bounds and advances."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def _take(self, n: int, what: str) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise ProtocolError(f"{what}: needs {n} bytes at offset {pos}, {self.end - pos} left")
        self.pos = pos + n
        return pos

    def peek(self) -> int:
        if self.pos >= self.end:
            raise ProtocolError(f"expected a byte at offset {self.pos}, packet ended")
        return self.buf[self.pos]

    def skip(self, n: int, what: str = "filler") -> None:
        self._take(n, what)

    def u8(self, what: str = "int<1>") -> int:
        return self.buf[self._take(1, what)]

    def u16(self, what: str = "int<2>") -> int:
        value: int = _U16.unpack_from(self.buf, self._take(2, what))[0]
        return value

    def u24(self, what: str = "int<3>") -> int:
        pos = self._take(3, what)
        return int.from_bytes(self.buf[pos:pos + 3], "little")

    def u32(self, what: str = "int<4>") -> int:
        value: int = _U32.unpack_from(self.buf, self._take(4, what))[0]
        return value

    def u64(self, what: str = "int<8>") -> int:
        value: int = _U64.unpack_from(self.buf, self._take(8, what))[0]
        return value

    def fixed(self, n: int, what: str = "string") -> bytes:
        pos = self._take(n, what)
        return bytes(self.buf[pos:pos + n])

    def rest(self) -> bytes:
        pos = self.pos
        self.pos = self.end
        return bytes(self.buf[pos:self.end])

    def lenenc_int(self, what: str = "length-encoded int") -> int:
        value, self.pos = read_lenenc_int(self.buf, self.pos)
        if value is None:
            raise ProtocolError(f"{what}: unexpected NULL marker at offset {self.pos - 1}")
        return value

    def lenenc_bytes_or_null(self, what: str = "length-encoded string") -> bytes | None:
        n, pos = read_lenenc_int(self.buf, self.pos)
        if n is None:
            self.pos = pos
            return None
        self.pos = pos
        start = self._take(n, what)
        return bytes(self.buf[start:start + n])

    def lenenc_bytes(self, what: str = "length-encoded string") -> bytes:
        n = self.lenenc_int(what)
        start = self._take(n, what)
        return bytes(self.buf[start:start + n])

    def lenenc_str(self, what: str = "length-encoded string") -> str:
        return self.lenenc_bytes(what).decode("utf-8", "surrogateescape")

    def nul_bytes(self, what: str = "NUL-terminated string") -> bytes:
        buf = self.buf
        pos = self.pos
        if isinstance(buf, memoryview):
            idx = bytes(buf[pos:self.end]).find(b"\x00")
            end = -1 if idx < 0 else pos + idx
        else:
            end = buf.find(b"\x00", pos, self.end)
        if end < 0:
            raise ProtocolError(f"{what} at offset {pos} has no NUL terminator")
        self.pos = end + 1
        return bytes(buf[pos:end])

    def nul_str(self, what: str = "NUL-terminated string") -> str:
        return self.nul_bytes(what).decode("utf-8", "surrogateescape")

    def nul_bytes_or_rest(self) -> bytes:
        """A NUL-terminated string whose terminator some peers omit at the end of a packet."""
        buf = bytes(self.buf[self.pos:self.end])
        idx = buf.find(b"\x00")
        if idx < 0:
            self.pos = self.end
            return buf
        self.pos += idx + 1
        return buf[:idx]
