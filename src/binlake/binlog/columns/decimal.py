"""MySQL binary DECIMAL (NEWDECIMAL): base-10^9 groups, big-endian, sign in the top bit.

Decoded to an exact decimal.Decimal that keeps the column's scale ('2.50', not '2.5').
Used by row images, binary JSON opaque values and user variables.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from ...errors import DecodeError

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
MAX_PRECISION = 65
MAX_SCALE = 38  # MySQL caps at 30, MariaDB at 38


@lru_cache(maxsize=None)
def decimal_layout(precision: int, scale: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """(total size in bytes, ((bytes, digits) per group, integer part first))."""
    if not (1 <= precision <= MAX_PRECISION and 0 <= scale <= min(precision, MAX_SCALE)):
        raise DecodeError(f"invalid DECIMAL({precision},{scale}) metadata")
    intg0, intg0x = divmod(precision - scale, 9)
    frac0, frac0x = divmod(scale, 9)
    groups: list[tuple[int, int]] = []
    if intg0x:
        groups.append((_DIG2BYTES[intg0x], intg0x))
    groups += [(4, 9)] * (intg0 + frac0)
    if frac0x:
        groups.append((_DIG2BYTES[frac0x], frac0x))
    return sum(b for b, _ in groups), tuple(groups)


def decimal_bin_size(precision: int, scale: int) -> int:
    return decimal_layout(precision, scale)[0]


def decode_decimal(buf: bytes | bytearray | memoryview, pos: int, precision: int, scale: int
                   ) -> tuple[Decimal, int]:
    size, groups = decimal_layout(precision, scale)
    end = pos + size
    if end > len(buf):
        raise DecodeError(f"DECIMAL({precision},{scale}) needs {size} bytes, {len(buf) - pos} left")
    raw = int.from_bytes(buf[pos:end], "big")
    top = 1 << (size * 8 - 1)
    negative = not (raw & top)
    raw ^= top
    if negative:
        raw ^= (1 << (size * 8)) - 1
    data = raw.to_bytes(size, "big")
    mantissa = 0
    off = 0
    for nbytes, ndigits in groups:
        group = int.from_bytes(data[off:off + nbytes], "big")
        limit = 10 ** ndigits
        if group >= limit:
            raise DecodeError(f"DECIMAL({precision},{scale}) has a {ndigits}-digit group "
                              f"with value {group}")
        mantissa = mantissa * limit + group
        off += nbytes
    sign = "-" if negative and mantissa else ""
    # Built from text: exact, no context precision or rounding, scale kept.
    return Decimal(f"{sign}{mantissa}E-{scale}"), end


def decode_decimal_bin(buf: bytes | bytearray | memoryview, precision: int, scale: int) -> Decimal:
    return decode_decimal(buf, 0, precision, scale)[0]
