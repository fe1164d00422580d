"""The one reader of MySQL's length-encoded integer (net_field_length), for protocol packets
and binlog event bodies alike.

    value < 0xFB: that byte;  0xFB: NULL;  0xFC / 0xFD / 0xFE: 2 / 3 / 8 bytes LE follow;
    0xFF: invalid

Each caller names its own errors (ProtocolError for packets, DecodeError or TruncatedError for
events, with its offsets and hints) through `fail`; this module imports nothing of binlake, so
the binlog decoder does not pull in the protocol package.
"""
from __future__ import annotations

from typing import Callable, Union

Buffer = Union[bytes, bytearray, memoryview]

Fail = Callable[[str, int, int, int], BaseException]
"""fail(kind, pos, detail, left) -> the exception to raise: kind "end" (pos is past the end),
"prefix" (0xFF; detail is the byte) or "short" (the value is cut short; detail is the number
of bytes after the first that it needs); left is len(buf) - pos."""

_WIDTH = {0xFC: 2, 0xFD: 3, 0xFE: 8}


def read_lenenc(buf: Buffer, pos: int, fail: Fail) -> tuple[int | None, int]:
    """The length-encoded integer at pos -> (value, end); value is None for the NULL marker."""
    if pos >= len(buf):
        raise fail("end", pos, 0, len(buf) - pos)
    first = buf[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFB:
        return None, pos + 1
    width = _WIDTH.get(first)
    if width is None:
        raise fail("prefix", pos, first, len(buf) - pos)
    end = pos + 1 + width
    if end > len(buf):
        raise fail("short", pos, width, len(buf) - pos)
    return int.from_bytes(buf[pos + 1:end], "little"), end
