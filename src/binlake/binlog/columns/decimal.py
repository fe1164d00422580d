"""MySQL binary DECIMAL (NEWDECIMAL): base-10^9 groups, big-endian, sign in the top bit.

Decoded to an exact decimal.Decimal that keeps the column's scale ('2.50', not '2.5').
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from ...errors import DecodeError

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


@lru_cache(maxsize=None)
def decimal_layout(precision: int, scale: int) -> tuple[int, tuple[tuple[int, int], ...], int]:
    """(total size, ((bytes, digits) per group in order), number of integer groups)."""
    if not (0 < precision <= 65 and 0 <= scale <= 38 and scale <= precision):
        raise DecodeError(f"invalid DECIMAL({precision},{scale}) metadata")
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    groups: list[tuple[int, int]] = []
    if intg0x:
        groups.append((_DIG2BYTES[intg0x], intg0x))
    groups += [(4, 9)] * intg0
    n_int = len(groups)
    groups += [(4, 9)] * frac0
    if frac0x:
        groups.append((_DIG2BYTES[frac0x], frac0x))
    return sum(b for b, _ in groups), tuple(groups), n_int


def decimal_size(precision: int, scale: int) -> int:
    return decimal_layout(precision, scale)[0]


def decode_decimal(buf: bytes | memoryview, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    size, groups, n_int = decimal_layout(precision, scale)
    data = bytearray(buf[pos:pos + size])
    if len(data) != size:
        raise DecodeError(f"DECIMAL({precision},{scale}) needs {size} bytes, {len(data)} left")
    negative = not (data[0] & 0x80)
    data[0] ^= 0x80
    if negative:
        for i in range(size):
            data[i] ^= 0xFF
    off = 0
    int_digits = []
    frac_digits = []
    for gi, (nbytes, ndigits) in enumerate(groups):
        value = int.from_bytes(data[off:off + nbytes], "big")
        off += nbytes
        if value >= 10 ** ndigits:
            raise DecodeError(f"DECIMAL group value {value} exceeds {ndigits} digits")
        if gi < n_int:
            int_digits.append(str(value) if not int_digits else f"{value:0{ndigits}d}")
        else:
            frac_digits.append(f"{value:0{ndigits}d}")
    text = "".join(int_digits) or "0"
    text = text.lstrip("0") or "0"
    if frac_digits:
        text += "." + "".join(frac_digits)
    if negative:
        text = "-" + text
    return Decimal(text), pos + size
